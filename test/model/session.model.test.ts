import { describe, expect, it } from "vitest";
import { getAdjacencyMap, getShortestPaths } from "xstate/graph";
import {
  ALL_EVENTS,
  asSteps,
  describeState,
  type GraphEvent,
  type GraphPath,
  named,
  type Snapshot,
  serialize,
  traversal,
} from "../support/session-graph-cases.js";
import { provided, replay } from "../support/session-harness.js";

// Model-based tests of the session machine (docs/architecture.md, "Testing"). xstate/graph walks the
// machine over an explicit event list (inbound messages in every mode, controls, lane answers, and the
// done/error results of every invoked actor, plus the collect window's delayed event); every path is
// replayed on a real actor whose invoked actors are fakes under the test's control, and after every step
// the invariants of docs/architecture.md are checked: at most one run (1), every message accounted for exactly once
// (5), and every decision states what actually happened (12).

const options = traversal(ALL_EVENTS, 500_000);
const shortest = getShortestPaths(provided, options as never).map((path) => named(asSteps(path)));

/** Transition coverage: the shortest path to each state, then each event the state handles. */
const transitions: GraphPath[] = (() => {
  const toState = new Map(shortest.map((path) => [serialize(path.steps.at(-1)!.state), path.steps]));
  const adjacency = getAdjacencyMap(provided as never, options as never);
  const out: GraphPath[] = [];
  for (const [key, vertex] of Object.entries(adjacency)) {
    const prefix = toState.get(key);
    if (!prefix) continue;
    for (const edge of Object.values(vertex.transitions) as Array<{ event: unknown; state: unknown }>) {
      const event = edge.event as GraphEvent;
      if (!(vertex.state as Snapshot).can(event as never)) continue;
      out.push(named([...prefix, { event, state: edge.state as Snapshot }]));
    }
  }
  return out;
})();

describe("session machine: shortest paths", () => {
  it("reaches every state of the session, including collecting and a recovery turn", () => {
    const values = new Set(shortest.map((path) => describeState(path.steps.at(-1)!.state).split(" ")[0]));
    for (const value of [
      "idle",
      "collecting",
      "resetting",
      "turn.waitingForLane",
      "turn.running",
      "turn.delivering",
    ]) {
      expect(values).toContain(value);
    }
  });

  for (const path of shortest) {
    it(`keeps one run and accounts for every message: ${path.name}`, async () => {
      await replay(path.steps);
    });
  }
});

describe("session machine: every transition", () => {
  for (const path of transitions) {
    it(`keeps one run and accounts for every message: ${path.name}`, async () => {
      await replay(path.steps);
    });
  }
});

// Simple paths stay small only over a narrower alphabet: steer/follow-up/interrupt arrivals (and /stop)
