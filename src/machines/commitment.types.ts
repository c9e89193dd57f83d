// The commitment's shapes: the stored record, the machine's input, context, events and the outputs of
// the actors the gateway provides (review, send).

import type { Classification, Commitment } from "../ports/commitment.js";

export * from "../ports/commitment.js";

/** What the due actor starts from. */
export interface CommitmentInput {
  commitment: Commitment;
  /** Clock time when it fell due. */
  now: number;
  maxPerDay: number;
  /** Sends of this session in the rolling 24 h before `now`. */
  sentInWindow: number;
}

/** What a commitment review decided: the class, the text it composed, and whether a newer message voided it. */
export interface ReviewOutput {
  /** A user message arrived while the review ran: its decision does not count. */
  voided: boolean;
  classification: Classification;
  /** The follow-up the review composed, when it classified the commitment as still pending. */
  text: string;
  /** `transcript`: settled by the conversation itself, no model call; `model`: a review call decided. */
  via: "transcript" | "model" | "none";
  /** Why there was no usable decision, when there was none. */
  why?: string;
  /** Clock time when the review ended. */
  at: number;
  /** Sends of this session in the rolling 24 h before `at`. */
  sentInWindow: number;
}

/** What the commitment's send actor is given: the commitment, the composed text and the review's class. */
export interface SendInput {
  commitment: Commitment;
  text: string;
  classification: Classification | null;
}

/** What the commitment's send actor answers: delivered or not (and why), and when. */
export interface SendOutput {
  delivered: boolean;
  messageId?: string;
  /** Why not, when not delivered. */
  reason?: string;
  at: number;
}

export interface CommitmentContext {
  commitment: Commitment;
  now: number;
  maxPerDay: number;
  sentInWindow: number;
  classification: Classification | null;
  text: string;
  /** Why it waits to retry, was dismissed or expired (for the event and the record). */
  why: string;
  /**
   * When a commitment waiting to retry is due again: `nextTick` (a user message, a busy session, a
   * failed send), `backoff` (no decision: later each time), `quota` (when the daily limit frees).
   */
  retry: "nextTick" | "backoff" | "quota";
}

/** The events the commitment machine takes. */
export type CommitmentEvent =
  | { type: "commitment.due"; now: number; sentInWindow: number }
  | { type: "commitment.dismiss"; why: string };

export type CommitmentEmitted =
  | { type: "commitment.due"; id: string; session: string; attempt: number }
  | {
      type: "commitment.reviewed";
      id: string;
      session: string;
      classification: Classification;
      via: ReviewOutput["via"];
      voided: boolean;
    }
  | { type: "commitment.sent"; id: string; session: string; messageId: string; text: string }
  | { type: "commitment.dismissed"; id: string; session: string; why: string }
  | { type: "commitment.retried"; id: string; session: string; why: string; attempt: number }
  | { type: "commitment.expired"; id: string; session: string };

/** How a commitment's machine ended: the retry it asks for, if any, and the review's class. */
export interface CommitmentOutput {
  retry: CommitmentContext["retry"];
  classification: Classification | null;
  why: string;
  text: string;
}
