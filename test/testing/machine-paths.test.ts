import { describe, expect, it } from "vitest";
import { laneEntryMachine } from "../../src/machines/lane-entry.machine.js";
import { MACHINE_NAMES, machinePaths } from "../../src/testing/machine-paths.js";

describe("machinePaths", () => {
  for (const machine of MACHINE_NAMES) {
    for (const kind of ["shortest", "simple"] as const) {
      it(`enumerates ${kind} paths of the ${machine} machine from its initial state`, () => {
        const paths = machinePaths(machine, { kind });
        expect(paths.length).toBeGreaterThan(0);
        const initial = paths[0]!.states[0];
        for (const path of paths) {
          expect(path.states[0]).toBe(initial);
          expect(path.events).toHaveLength(path.states.length - 1);
          expect(path.name.startsWith(initial!)).toBe(true);
        }
      }, 30_000);
    }
  }

  it("reaches every state of the lane entry's lifecycle, `stopping` when the config gives an abort grace", () => {
    const states = Object.keys(laneEntryMachine.states).sort();
    const reached = new Set(machinePaths("lane-entry").flatMap((path) => path.states));
    expect([...reached].sort()).toEqual(states.filter((state) => state !== "stopping"));
    const withGrace = machinePaths("lane-entry", { config: { laneTimeoutMs: 1_000, laneAbortGraceMs: 500 } });
    expect([...new Set(withGrace.flatMap((path) => path.states))].sort()).toEqual(states);
  });

  it("bounds simple paths so a large graph still finishes", () => {
    const bounded = machinePaths("session", { kind: "simple", maxPaths: 40 });
    expect(bounded.length).toBeGreaterThan(0);
    expect(bounded.length).toBeLessThanOrEqual(40);
  }, 30_000);

  it("shows both sides of the re-check limit in the run machine's shortest paths", () => {
    const names = machinePaths("run").map((path) => path.name);
    expect(names.some((name) => name.endsWith("streaming (re-check 1)"))).toBe(true);
    expect(names.some((name) => name.endsWith("done (re-check 1, stale draft shipped: limit)"))).toBe(true);
  });

  it("lets the config shape the graph: no re-check pass when maxPasses is 0, no steering in followup mode", () => {
    const noPasses = machinePaths("run", { config: { staleReplyRecheck: { maxPasses: 0 } } });
    expect(noPasses.some((path) => path.name.includes("re-check 1"))).toBe(false);
    expect(noPasses.some((path) => path.name.includes("stale draft shipped: limit"))).toBe(true);
    const twoPasses = machinePaths("run", { config: { staleReplyRecheck: { maxPasses: 2 } } });
    expect(twoPasses.some((path) => path.name.includes("re-check 2"))).toBe(true);
    const followup = machinePaths("run", { config: { queue: { mode: "followup" } } });
    expect(followup.some((path) => path.events.includes("run.steer"))).toBe(false);
    expect(followup.some((path) => path.events.includes("run.abort"))).toBe(false);
    const interrupt = machinePaths("session", { config: { queue: { mode: "interrupt" } } });
    expect(interrupt.every((path) => !path.name.includes("a steer message"))).toBe(true);
  }, 30_000);

  it("keeps only paths the machine really takes: replaying each one's events passes its states", () => {
    for (const machine of ["session", "run"] as const) {
      for (const path of machinePaths(machine, { kind: "simple", maxPaths: 100 }))
        expect(path.isExact).toBe(true);
    }
  }, 30_000);

  it("names an unknown queue mode in the config as a config error", () => {
    expect(() => machinePaths("run", { config: { queue: { mode: "shout" } } as never })).toThrow(
      /queue\.mode/,
    );
  });
});
