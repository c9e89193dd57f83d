import { afterEach, describe, expect, it, vi } from "vitest";
import { machinePaths } from "../../src/testing/machine-paths.js";

// A planted bug: a run that keeps going through its tool batch after a steering message arrived (the
// guard that skips the rest of the batch never holds). The gateway is real; only that guard is broken.
async function withBrokenSteer() {
  vi.resetModules();
  vi.doMock("../../src/machines/run.machine.js", async (importOriginal) => {
    const real = await importOriginal<typeof import("../../src/machines/run.machine.js")>();
    return { ...real, runMachine: real.runMachine.provide({ guards: { steerPending: () => false } }) };
  });
  const kit = await import("../../src/testing/index.js");
  return kit;
}

afterEach(() => {
  vi.doUnmock("../../src/machines/run.machine.js");
  vi.resetModules();
});

const twoTools = (clock: { setTimeout(fn: () => void, ms: number): unknown }) => [
  {
    name: "write_file",
    cancellable: false,
    execute: () => new Promise((resolve) => clock.setTimeout(() => resolve("written"), 2000)),
  },
  { name: "search", cancellable: true, execute: async () => "found" },
];
const model = [
  { when: { call: 1 }, reply: { delayMs: 200, toolCalls: [{ name: "write_file" }, { name: "search" }] } },
  { reply: { delayMs: 300, text: "Re: {{latestUser}}" } },
];

describe("invariant: no tool after a steer arrived", () => {
  it("holds on the real gateway: the batch's next tool is skipped for the steering message", async () => {
    const { createTestGateway } = await import("../../src/testing/index.js");
    const t = await createTestGateway({ model, tools: twoTools });
    await t.receive({ session: "test:1", text: "update the file" });
    await t.advance(1000);
    await t.receive({ session: "test:1", text: "don't search, just write" });
    await t.settle();
    expect(t.events.filter((event) => event.type === "tool.started").map((event) => event.name)).toEqual([
      "write_file",
    ]);
    await t.stop();
  });

  it("catches a gateway that runs a tool after a steer arrived, with a readable failure", async () => {
    const { createTestGateway, InvariantError } = await withBrokenSteer();
    const t = await createTestGateway({ model, tools: twoTools });
    await t.receive({ session: "test:1", text: "update the file" });
    await t.advance(1000);
    await t.receive({ session: "test:1", text: "don't search, just write" });
    const failure = await t.settle().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InvariantError);
    const story = (failure as Error).message.split("\n");
    expect(story[0]).toBe(
      "invariant no tool after a steer broken at 2200 ms: tool search started in run test:1#1 after the steering message m2 arrived (at 1000 ms) and before the model saw it: the rest of the batch should have been skipped",
    );
    // The message's own story follows: it was steered, and only later seen by the model.
    expect(story).toContain("  1000 ms  arrived; steered (mode steer from default)");
    await t.stop();
  });

  it("fails generated run paths that steer before tools run, and no path without steering", async () => {
    // Paths come from the real machine; only their replay runs on the broken gateway.
    const paths = machinePaths("run", { kind: "shortest" });
    const { replayPath } = await withBrokenSteer();
    const caught: string[] = [];
    for (const path of paths) {
      const replay = await replayPath(path);
      if (replay.story.includes("invariant no tool after a steer broken")) caught.push(path.name);
    }
    expect(caught.length).toBeGreaterThan(0);
    // Steering held while the model asks for tools, or while a tool of the batch runs.
    for (const name of caught) expect(name).toMatch(/a steering message→ .*(toolBatch|asks for tools)/);
  }, 60_000);
});
