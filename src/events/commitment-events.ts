import type { InCommitment, InSession, InTurn } from "./event-fields.js";

/** Commitments: the follow-ups a turn promised (docs/commitments.md). Part of `TillerEventMap` (src/events.ts). */
export interface CommitmentEventMap {
  // Commitments
  /** The model proposed a follow-up with the built-in `commitment` tool (validated fields). */
  "commitment.proposed": InTurn & {
    kind: "open_loop" | "deadline_check" | "event_check_in" | "care_check_in";
    reason: string;
    suggestedText: string;
    dedupeKey: string;
    confidence: number;
    dueWindow: { earliestMs?: number; latestMs?: number };
    source: string;
  };

  // Commitments (docs/commitments.md)
  /** A commitment was stored (the `commitment` tool, the extraction hook or `commitments.propose`). */
  "commitment.created": InCommitment & {
    runId?: string | undefined;
    kind: string;
    dedupeKey: string;
    dueAt: number;
  };
  /** A proposal with the dedupe key of a pending commitment widened it instead of adding one. */
  "commitment.merged": InCommitment & { runId?: string | undefined; dedupeKey: string };
  /** A proposal was refused: the field and why. */
  "commitment.rejected": InSession & {
    runId?: string | undefined;
    field?: string | undefined;
    reason: string;
  };
  /** A heartbeat tick took it from the due index: its review begins (`attempt` counts reviews). */
  "commitment.due": InCommitment & { attempt: number };
  /** The review's classification, `via` the transcript alone or a model call; `voided` by a user message. */
  "commitment.reviewed": InCommitment & { classification: string; via: string; voided: boolean };
  /** The follow-up was sent (a committed receipt), in the review's own words. */
  "commitment.sent": InCommitment & { messageId: string; text: string };
  /** A send was cut off by a crash: it may have reached the user, so it is never sent again. */
  "commitment.sendInterrupted": InCommitment & { receipt: "unknown"; text: string };
  /** It ended without a send: completed, superseded, a duplicate of its dedupeKey, or dismissed by an operator (`why`). */
  "commitment.dismissed": InCommitment & {
    why: string;
    /** With `why: "duplicate"`: the commitment of the same session and dedupeKey that stands. */
    duplicateOf?: string;
  };
  /** No decision this time (unclear, an error, a voided review): reviewed again at a later tick. */
  "commitment.retried": InCommitment & { why: string; attempt: number };
  /** Its window passed without a still-pending review: nothing was sent. */
  "commitment.expired": InCommitment;
  /**
   * Its review could not start (the session's lane refused it, or on a shared store the session's
   * `maxPerDay` is used by sends and sends in flight across the cluster); it stays pending.
   */
  "commitment.deferred": InCommitment & { reason: string };
  /** A commitment's state could not be stored. */
  "commitment.storeFailed": { session?: string | undefined; id: string; error: string };
  /** The gateway's `extractCommitments` hook threw for a finished turn. */
  "commitment.extractFailed": InTurn & { error: string };
  /** A commitments heartbeat tick: how many fell due and how many are pending. */
  "heartbeat.ticked": { due: number; pending: number };
}
