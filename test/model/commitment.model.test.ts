import { describe, expect, it } from "vitest";
import { createActor, fromPromise, type SnapshotFrom } from "xstate";
import type { StatePath } from "xstate/graph";
import { getShortestPaths, getSimplePaths } from "xstate/graph";
import { parseConfig } from "../../src/config.js";
import { commitmentMachine } from "../../src/machines/commitment.machine.js";
import type {
  Commitment,
  CommitmentEmitted,
  CommitmentEvent,
  CommitmentInput,
  ReviewOutput,
  SendInput,
  SendOutput,
} from "../../src/machines/commitment.types.js";
import { normalizeText } from "../../src/policy/commitment-review.js";
import {
  COMMITMENT_GRAPH_SUGGESTED,
  commitmentTraversal,
  COMMITMENT_GRAPH_EXPIRES_AT as EXPIRES_AT,
} from "../../src/testing/commitment-graph.js";
import { type Deferred, deferred } from "../support/deferred.js";

// Graph-based tests of the commitment machine (docs/commitments.md, invariant 10). xstate/graph enumerates
// its paths over an explicit event list that includes every kind of result of the invoked review and
// send actors; each path is replayed on a real actor whose review and send are deferreds the test
// settles. After every step the real actor must be where the graph says, and no path may reach a send
// without a still-pending model decision, composed by the review, within maxPerDay.

type Snapshot = SnapshotFrom<typeof commitmentMachine>;
type GraphEvent =
  | CommitmentEvent
  | { type: "xstate.done.actor.review"; output: ReviewOutput }
  | { type: "xstate.error.actor.review"; error: unknown }
  | { type: "xstate.done.actor.send"; output: SendOutput }
  | { type: "xstate.error.actor.send"; error: unknown };
type Path = StatePath<Snapshot, GraphEvent>;

const MAX_PER_DAY = 3;
const SUGGESTED = COMMITMENT_GRAPH_SUGGESTED;
// The kit's traversal (what `tiller paths commitment` enumerates), with two more review results: the
// stored suggestion in other case and spacing, and a still-pending decision read from the transcript.
const kit = commitmentTraversal(parseConfig({ commitments: { maxPerDay: MAX_PER_DAY } }));
const review = (fields: Partial<ReviewOutput>): ReviewOutput => ({
  voided: false,
  classification: "still_pending_user",
  text: "",
  via: "model",
  at: 5000,
  sentInWindow: 0,
  ...fields,
});
const EVENTS = [
  ...(kit.events as GraphEvent[]),
  {
    type: "xstate.done.actor.review",
    output: review({ text: SUGGESTED.toUpperCase().replace(/ /g, "  ") }),
  },
  { type: "xstate.done.actor.review", output: review({ text: "From the transcript?", via: "transcript" }) },
] satisfies GraphEvent[];

const traversal = {
  input: kit.input satisfies CommitmentInput,
  events: EVENTS as CommitmentEvent[],
  serializeState: kit.serializeState as (snapshot: Snapshot) => string,
  filterEvents: kit.filterEvents as (snapshot: Snapshot, event: CommitmentEvent) => boolean,
  limit: 5_000,
};

const shortest = getShortestPaths(commitmentMachine, traversal) as unknown as Path[];
const simple = getSimplePaths(commitmentMachine, traversal) as unknown as Path[];

function label(event: GraphEvent): string {
  switch (event.type) {
    case "commitment.due":
      return event.now >= EXPIRES_AT
        ? "due past window"
        : event.sentInWindow >= MAX_PER_DAY
          ? "due over quota"
          : "due";
    case "commitment.dismiss":
      return "dismiss";
    case "xstate.done.actor.review": {
      const o = event.output;
      return `review ${o.classification}${o.voided ? " voided" : ""}${o.via !== "model" ? ` (${o.via})` : ""}${o.sentInWindow >= MAX_PER_DAY ? " over quota" : ""}${o.at >= EXPIRES_AT ? " past window" : ""}${normalizeText(o.text) === normalizeText(SUGGESTED) ? " = suggestion" : ""}`;
    }
    case "xstate.error.actor.review":
      return "review fails";
    case "xstate.done.actor.send":
      return event.output.delivered ? "sent" : "send not committed";
    case "xstate.error.actor.send":
      return "send fails";
  }
}

const name = (path: Path) =>
  path.steps
    .map((step, index) =>
      index === 0
        ? String(step.state.value)
        : `—${label(step.event as GraphEvent)}→ ${String(step.state.value)}`,
    )
    .join(" ");

/** Invariant 10 on the graph itself: every entry into `sending` follows a sendable review decision. */
function graphViolations(path: Path): string[] {
  const problems: string[] = [];
  for (let i = 1; i < path.steps.length; i++) {
    const before = path.steps[i - 1]!.state;
    const step = path.steps[i]!;
    const event = step.event as GraphEvent;
    if (step.state.matches("sending") && !before.matches("sending")) {
      if (!before.matches("reviewing") || event.type !== "xstate.done.actor.review") {
        problems.push(`sending entered from ${String(before.value)} by ${event.type}`);
        continue;
      }
      const o = event.output;
      if (o.classification !== "still_pending_user" && o.classification !== "still_pending_agent")
        problems.push(`sending after a ${o.classification} review`);
      if (o.voided) problems.push("sending after a voided review");
      if (o.via !== "model") problems.push(`sending after a ${o.via} review`);
      if (o.sentInWindow >= MAX_PER_DAY) problems.push("sending over maxPerDay");
      if (normalizeText(o.text) === normalizeText(SUGGESTED)) problems.push("sending the stored suggestion");
    }
    if (step.state.matches("sent") && !(before.matches("sending") && event.type === "xstate.done.actor.send"))
      problems.push(`sent without a send from ${String(before.value)}`);
  }
  return problems;
}

class Replay {
  readonly emitted: CommitmentEmitted[] = [];
  review: Deferred<ReviewOutput> | null = null;
  send: { input: SendInput; result: Deferred<SendOutput> } | null = null;
  readonly actor;

  constructor() {
    const logic = commitmentMachine.provide({
      actors: {
        review: fromPromise<ReviewOutput, Commitment>(() => {
          this.review = deferred<ReviewOutput>();
          return this.review.promise;
        }),
        send: fromPromise<SendOutput, SendInput>(({ input }) => {
          this.send = { input, result: deferred<SendOutput>() };
          return this.send.result.promise;
        }),
      },
    });
    this.actor = createActor(logic, { input: traversal.input });
    this.actor.on("*", (event) => this.emitted.push(event));
    this.actor.start();
  }

  async apply(event: GraphEvent): Promise<void> {
    if (event.type === "commitment.due" || event.type === "commitment.dismiss") this.actor.send(event);
    else if (event.type === "xstate.done.actor.review") this.take("review").resolve(event.output);
    else if (event.type === "xstate.error.actor.review") this.take("review").reject(event.error);
    else if (event.type === "xstate.done.actor.send") this.take("send").result.resolve(event.output);
    else this.take("send").result.reject(event.error);
    await new Promise((resolve) => setImmediate(resolve));
  }

  private take<K extends "review" | "send">(kind: K): NonNullable<this[K]> {
    const pending = this[kind];
    if (!pending) throw new Error(`the graph settles ${kind}, but none runs on the real actor`);
    this[kind] = null as this[K];
    return pending as NonNullable<this[K]>;
  }
}

async function replay(path: Path): Promise<void> {
  const real = new Replay();
  const sends: string[] = [];
  for (const [index, step] of path.steps.entries()) {
    if (index > 0) {
      const wasSending = real.actor.getSnapshot().matches("sending");
      await real.apply(step.event as GraphEvent);
      if (!wasSending && real.send && !sends.includes(real.send.input.text)) sends.push(real.send.input.text);
    }
    const snapshot = real.actor.getSnapshot();
    expect(snapshot.value, `step ${index}`).toEqual(step.state.value);
    expect(snapshot.status).toBe(step.state.status);
  }
  const last = path.steps.at(-1)!.state;
  const types = real.emitted.map((event) => event.type);
  // The send actor only ever got the review's own composed text, never the stored suggestion.
  for (const text of sends) expect(normalizeText(text)).not.toBe(normalizeText(SUGGESTED));
  // Every transition is an event: the ending's event is there, a send only with its review before it.
  if (last.matches("sent")) {
    expect(types.at(-1)).toBe("commitment.sent");
    expect(real.emitted.findLast((event) => event.type === "commitment.reviewed")).toMatchObject({
      via: "model",
      voided: false,
    });
  } else expect(types).not.toContain("commitment.sent");
  if (last.matches("dismissed")) expect(types.at(-1)).toBe("commitment.dismissed");
  if (last.matches("expired")) expect(types.at(-1)).toBe("commitment.expired");
  if (last.matches("waitingToRetry")) expect(types.at(-1)).toBe("commitment.retried");
  const dues = path.steps.filter((step) => (step.event as GraphEvent).type === "commitment.due").length;
  expect(types.filter((type) => type === "commitment.due")).toHaveLength(dues);
  real.actor.stop();
}

describe("commitment machine graph", () => {
  it("reaches every state, and no shortest or simple path sends without a sendable review", () => {
    // `due` decides in the step that enters it (its entry emits commitment.due): never a resting state.
    const reached = new Set(shortest.map((path) => String(path.state.value)));
    expect([...reached].sort()).toEqual(
      ["dismissed", "expired", "reviewing", "scheduled", "sending", "sent", "waitingToRetry"].sort(),
    );
    for (const path of [...shortest, ...simple]) expect(graphViolations(path), name(path)).toEqual([]);
    expect(simple.length).toBeGreaterThan(shortest.length);
  });

  describe("shortest paths on the real actor", () => {
    for (const path of shortest) it(name(path), () => replay(path));
  });

  describe("simple paths on the real actor", () => {
    for (const path of simple) it(name(path), () => replay(path));
  });
});
