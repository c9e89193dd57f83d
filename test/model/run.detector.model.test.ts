import { describe, expect, it } from "vitest";
import type { RunOutput } from "../../src/machines/run.machine.js";
import {
  adjacency,
  configNamed,
  eventLabel,
  type GraphConfig,
  type Path,
  shortestPaths,
  stateKey,
  stateLabel,
} from "../support/run-graph-cases.js";
import { recheckEventsOf, replayPath } from "../support/run-replay.js";

// The gateway's own detector in the run machine's graph: every way out of `detecting`, and the paths
// through a verdict, a failure and a steered message, replayed on the real actor.

describe("run machine: the gateway's own detector", () => {
  const plain = configNamed("the gateway's own detector");
  const stale = configNamed(
    "the gateway's own detector with maxPasses 2, on a draft the built-in signals call stale",
  );

  it("enumerates the detecting state and every way out of it: a verdict, a failure, an abort, a /stop", () => {
    const out = new Set<string>();
    for (const { state, transitions } of Object.values(adjacency(plain))) {
      if (!state.matches({ finalizing: "detecting" })) continue;
      // An event the state ignores leaves it as it was: not a way out.
      for (const { event, state: next } of Object.values(transitions))
        if (stateKey(next) !== stateKey(state))
          out.add(`${event.type} → ${String(stateLabel(next)).replace(/ \(.*\)$/, "")}`);
    }
    expect([...out].sort()).toEqual([
      "run.abort → aborted",
      "run.steer → finalizing.detecting",
      "run.stop → aborted",
      "xstate.done.actor.detectStale → done",
      "xstate.done.actor.detectStale → streaming",
      "xstate.error.actor.detectStale → done",
      "xstate.error.actor.detectStale → streaming",
    ]);
  });

  /** The path through the graph's own transitions for this sequence of (labelled) events. */
  function pathWith(config: GraphConfig, labels: string[]): Path {
    const map = adjacency(config);
    const first = shortestPaths(config)[0]!.steps[0]!;
    const steps: Path["steps"] = [first];
    for (const label of labels) {
      const from = steps.at(-1)!.state;
      const next = Object.values(map[stateKey(from)]?.transitions ?? {}).find(
        (transition) => eventLabel(transition.event) === label,
      );
      if (!next) throw new Error(`no "${label}" from ${stateLabel(from)}`);
      steps.push({ state: next.state, event: next.event });
    }
    return { state: steps.at(-1)!.state, steps, weight: steps.length };
  }

  it("re-drafts on the detector's stale verdict, with its figures, and says the detector decided", async () => {
    const path = pathWith(plain, ["model drafts a final", "detector says stale"]);
    const replay = await replayPath(plain, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({
        type: "recheck.fired",
        reason: "low-overlap",
        detail: "the judge says so",
        detector: "custom",
        fallback: false,
        figures: { score: 0.9 },
      }),
    ]);
    expect(replay.detectInputs[0]?.facts).toMatchObject({
      draft: plain.draft,
      newest: plain.messages[0],
      newerArrived: false,
    });
  });

  it("ships the draft when the detector finds it fine, although the built-in signals would not", async () => {
    const path = pathWith(stale, ["model drafts a final", "detector says fine"]);
    const replay = await replayPath(stale, path);
    expect(recheckEventsOf(replay)).toEqual([]);
    expect((replay.snapshot.output as RunOutput).final).toBe(stale.draft);
  });

  it("falls back to the built-in signals when the detector times out, and says so", async () => {
    const path = pathWith(stale, ["model drafts a final", "detector times out"]);
    const replay = await replayPath(stale, path);
    expect(replay.emitted.filter((event) => event.type === "recheck.detectorFailed")).toEqual([
      expect.objectContaining({
        error: expect.objectContaining({ code: "DETECTOR_TIMEOUT" }),
        fallback: "built-in",
      }),
    ]);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({
        type: "recheck.fired",
        reason: "low-overlap",
        detector: "built-in",
        fallback: true,
        figures: expect.objectContaining({ newestOverlap: 0 }),
      }),
    ]);
  });

  it("calls a draft stale for newer-message when a message is steered in while the detector judges", async () => {
    const path = pathWith(plain, ["model drafts a final", "steer", "detector says fine"]);
    const replay = await replayPath(plain, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.fired", reason: "newer-message", detector: "built-in" }),
    ]);
    expect(replay.calls.at(-1)?.recheck).toBe(true);
  });
});
