import type { EventObject } from "xstate";
import type { GatewayConfig } from "../config.js";
import { commitmentMachine } from "../machines/commitment.machine.js";
import type { Commitment, ReviewOutput } from "../machines/commitment.types.js";

/** When the fixture commitment's window closes: a `now` at or past it is "past the window". */
export const EXPIRES_AT = 1_000_000;
const SUGGESTED = "Should I keep the list as it was?";

/** A pending commitment due at 1000 that the graphs start from (the graph tests reuse it). */
export function commitmentFixture(fields: Partial<Commitment> = {}): Commitment {
  return {
    id: "c1",
    session: "web:1",
    kind: "open_loop",
    source: "tool",
    reason: "asked the user to confirm the list",
    suggestedText: SUGGESTED,
    dedupeKey: "list",
    confidence: 0.9,
    dueWindow: { earliestAt: 1000, latestAt: 2000 },
    sourceMessageId: "m1",
    createdAt: 0,
    updatedAt: 0,
    status: "pending",
    dueAt: 1000,
    attempts: 0,
    expiresAt: EXPIRES_AT,
    ...fields,
  };
}

const COMMITMENT = commitmentFixture();

type Snapshot = {
  status: string;
  value: unknown;
  matches(state: string): boolean;
  context: { now: number; sentInWindow: number };
};

/**
 * The commitment machine's graph for `machinePaths("commitment")`: due now, over the daily limit or
 * past the window; every kind of review result (still pending within and over the limit, the stored
 * suggestion, voided, settled by the transcript, unclear, past the window, an error) and send result.
 */
export function commitmentTraversal(config: GatewayConfig) {
  const maxPerDay = Math.max(1, config.commitments.maxPerDay);
  const review = (fields: Partial<ReviewOutput>): ReviewOutput => ({
    voided: false,
    classification: "unclear",
    text: "",
    via: "model",
    at: 5000,
    sentInWindow: 0,
    ...fields,
  });
  const events: Array<EventObject & Record<string, unknown>> = [
    { type: "commitment.due", now: 5000, sentInWindow: 0 },
    { type: "commitment.due", now: 5000, sentInWindow: maxPerDay },
    { type: "commitment.due", now: EXPIRES_AT, sentInWindow: 0 },
    { type: "commitment.dismiss", why: "operator" },
    {
      type: "xstate.done.actor.review",
      output: review({ classification: "still_pending_user", text: "Is the new list right?" }),
    },
    {
      type: "xstate.done.actor.review",
      output: review({ classification: "still_pending_agent", text: "Still on it." }),
    },
    {
      type: "xstate.done.actor.review",
      output: review({ classification: "still_pending_user", text: "Still open?", sentInWindow: maxPerDay }),
    },
    {
      type: "xstate.done.actor.review",
      output: review({ classification: "still_pending_user", text: SUGGESTED }),
    },
    {
      type: "xstate.done.actor.review",
      output: review({ classification: "still_pending_user", text: "Still open?", voided: true }),
    },
    { type: "xstate.done.actor.review", output: review({ classification: "completed", via: "transcript" }) },
    { type: "xstate.done.actor.review", output: review({ classification: "superseded" }) },
    { type: "xstate.done.actor.review", output: review({ classification: "unclear" }) },
    { type: "xstate.done.actor.review", output: review({ classification: "unclear", at: EXPIRES_AT }) },
    { type: "xstate.error.actor.review", error: { message: "model down" } },
    { type: "xstate.done.actor.send", output: { delivered: true, messageId: "d1", at: 6000 } },
    { type: "xstate.done.actor.send", output: { delivered: false, reason: "channel down", at: 6000 } },
    { type: "xstate.error.actor.send", error: { message: "store down" } },
  ];
  return {
    machine: commitmentMachine,
    input: { commitment: COMMITMENT, now: 1000, maxPerDay, sentInWindow: 0 },
    events,
    serializeState: ((snapshot: Snapshot) =>
      JSON.stringify([
        snapshot.status,
        snapshot.value,
        snapshot.context.now >= EXPIRES_AT,
        snapshot.context.sentInWindow,
      ])) as (snapshot: never) => string,
    filterEvents: ((snapshot: Snapshot, event: EventObject) => {
      if (snapshot.status !== "active") return false;
      if (event.type.endsWith(".review")) return snapshot.matches("reviewing");
      if (event.type.endsWith(".send")) return snapshot.matches("sending");
      return true;
    }) as (snapshot: never, event: never) => boolean,
    label: (event: EventObject) => {
      const e = event as EventObject & {
        output?: ReviewOutput & { delivered?: boolean };
        now?: number;
        sentInWindow?: number;
      };
      if (e.type === "commitment.due")
        return e.now! >= EXPIRES_AT
          ? "due past window"
          : e.sentInWindow! >= maxPerDay
            ? "due over maxPerDay"
            : "due";
      if (e.type === "xstate.done.actor.review") {
        const o = e.output!;
        return `review ${o.classification}${o.voided ? " voided" : ""}${o.via === "transcript" ? " (transcript)" : ""}${o.sentInWindow >= maxPerDay ? " over maxPerDay" : ""}${o.at >= EXPIRES_AT ? " past window" : ""}${o.text === SUGGESTED ? " = suggestion" : ""}`;
      }
      if (e.type === "xstate.done.actor.send") return e.output!.delivered ? "sent" : "send not committed";
      if (e.type === "xstate.error.actor.review") return "review fails";
      if (e.type === "xstate.error.actor.send") return "send fails";
      return e.type.replace("commitment.", "");
    },
  };
}
