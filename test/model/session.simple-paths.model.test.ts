import { describe, expect, it } from "vitest";
import { getSimplePaths } from "xstate/graph";
import {
  asSteps,
  GRAPH_RUN_INPUT,
  GRAPH_RUN_OUTPUT,
  type GraphEvent,
  type GraphPath,
  graphMessage,
  named,
  type Snapshot,
  serialize,
  traversal,
} from "../support/session-graph-cases.js";
import { provided, replay } from "../support/session-harness.js";

// Simple paths of the session machine up to the first delivery, replayed on a real actor with the
// invariants of test/support/session-harness.ts checked after every step.

// at every stage of the first turn, with the happy results of its actors, until that turn is delivered.
// Counting turns in the key keeps "idle after the first turn" apart from the initial idle.
const SIMPLE_EVENTS: GraphEvent[] = [
  graphMessage("steer", "steer"),
  graphMessage("followup", "followup"),
  graphMessage("interrupt", "interrupt"),
  { type: "lane.granted", runId: "s#g", input: GRAPH_RUN_INPUT },
  { type: "xstate.done.actor.run", output: GRAPH_RUN_OUTPUT },
  { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
];
const firstTurnDelivered = (snapshot: Snapshot) =>
  snapshot.context.turnSeq === 1 &&
  (snapshot.matches("idle") ||
    snapshot.matches("collecting") ||
    snapshot.matches({ turn: "waitingForLane" }));

function simplePaths(events: readonly GraphEvent[], maxWaiting: number): GraphPath[] {
  return getSimplePaths(provided, {
    ...traversal(events, 50_000, (snapshot) => `${serialize(snapshot)}#${snapshot.context.turnSeq}`),
    toState: firstTurnDelivered,
    stopWhen: (snapshot: Snapshot) =>
      firstTurnDelivered(snapshot) || snapshot.context.queue.length > maxWaiting,
  } as never).map((path) => named(asSteps(path)));
}

const simple = [
  ...simplePaths(SIMPLE_EVENTS, 1),
  ...simplePaths([...SIMPLE_EVENTS, { type: "session.stop" }], 0).filter((path) =>
    path.steps.some((step) => step.event.type === "session.stop"),
  ),
];

describe("session machine: simple paths to the first delivery (steer, follow-up, interrupt, /stop)", () => {
  it("finds a bounded set of simple paths", () => {
    expect(simple.length).toBeGreaterThan(100);
    expect(simple.length).toBeLessThan(500);
  });

  for (const path of simple) {
    it(`keeps one run and accounts for every message: ${path.name}`, async () => {
      await replay(path.steps);
    });
  }
});
