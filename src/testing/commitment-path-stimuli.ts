import { type EventObject, getNextSnapshot } from "xstate";
import { stateName } from "../gateway/inbound/validate-inbound.js";
import { commitmentMachine } from "../machines/commitment.machine.js";
import type { Scenario } from "../scenario/schema.js";
import { COMMITMENT_GRAPH_SUGGESTED, type CommitmentGraphSnapshot } from "./commitment-graph.js";
import type { MachinePath } from "./machine-paths.js";

// The fixed parts of a generated commitment scenario (commitment-path-scenario.ts): the session, the
// heartbeat, turn 1 that proposes the commitment, the other commitments that use up a day's sends, and
// how a path that stops early is carried on.

type Rule = Scenario["model"][number];
type Step = MachinePath["steps"][number];

export const SESSION = "web:path";
export const CHANNEL = "web";
/** The commitment the path follows: the first one the scenario's turn proposes. */
export const PATH_COMMITMENT = "commitment-1";
export const HEARTBEAT_MS = 60_000;
/** Turn 1's model call that proposes the commitment ends here: the commitment is created then. */
export const PROPOSE_MS = 100;
export const EARLIEST_MS = 90_000;
/** The commitment's first due time (its window opens then; the window is that one moment). */
export const FIRST_DUE = PROPOSE_MS + EARLIEST_MS;
export const DAY_MS = 24 * 3_600_000;
const FOLLOW_UP = "Is the new list right?";
export const REQUEST = "Draft the competitor list";

/** Turn 1: the model proposes the commitment with the `commitment` tool, then asks the user. */
export function proposalRules(): Rule[] {
  return [
    {
      when: { review: false, latestUser: REQUEST, call: 1 },
      reply: {
        delayMs: PROPOSE_MS,
        toolCalls: [
          {
            name: "commitment",
            args: {
              kind: "open_loop",
              reason: "asked the user to confirm the competitor list",
              suggestedText: COMMITMENT_GRAPH_SUGGESTED,
              dedupeKey: "competitor-list",
              confidence: 0.9,
              dueWindow: { earliestMs: EARLIEST_MS, latestMs: EARLIEST_MS },
            },
          },
        ],
      },
    },
    {
      when: { review: false, latestUser: REQUEST, call: 2 },
      reply: { delayMs: PROPOSE_MS, text: "Here is the draft list. Can you confirm it?" },
    },
  ];
}

/** Another commitment of the session, due at `dueAt`, whose review sends at once. */
export function otherCommitment(n: number, dueAt: number): Scenario["commitments"][number] {
  return {
    id: `other-${n}`,
    session: SESSION,
    kind: "open_loop",
    source: "scenario",
    reason: `another open question (${n})`,
    suggestedText: "",
    dedupeKey: `other-${n}`,
    confidence: 0.9,
    dueAt,
    sourceMessageId: "m1",
    status: "pending",
  };
}

/** The first heartbeat tick (every minute from 0) at or after `dueAt`, and after `now`. */
export function tickAt(dueAt: number, now: number): number {
  return Math.ceil(Math.max(dueAt, now + 1) / HEARTBEAT_MS) * HEARTBEAT_MS;
}

/** Carries a path on to an end the way a well-behaved review would: due, a follow-up, sent. */
export function completed(path: MachinePath): MachinePath {
  const steps: Step[] = [...path.steps];
  let snapshot = steps[steps.length - 1]!.snapshot as CommitmentGraphSnapshot;
  for (let guard = 0; snapshot.status === "active" && guard < 10; guard++) {
    const event = defaultEvent(snapshot);
    snapshot = getNextSnapshot(commitmentMachine, snapshot as never, event as never) as never;
    steps.push({ event, snapshot });
  }
  if (steps.length === path.steps.length) return path;
  const states = steps.map((step) => stateName((step.snapshot as CommitmentGraphSnapshot).value));
  return { ...path, steps, states, events: steps.slice(1).map((step) => step.event.type) };
}

function defaultEvent(snapshot: CommitmentGraphSnapshot): EventObject {
  if (snapshot.matches("reviewing"))
    return {
      type: "xstate.done.actor.review",
      output: {
        voided: false,
        classification: "still_pending_user",
        text: FOLLOW_UP,
        via: "model",
        at: 5000,
        sentInWindow: 0,
      },
    } as EventObject;
  if (snapshot.matches("sending"))
    return {
      type: "xstate.done.actor.send",
      output: { delivered: true, messageId: "d1", at: 6000 },
    } as EventObject;
  return { type: "commitment.due", now: 5000, sentInWindow: 0 } as EventObject;
}
