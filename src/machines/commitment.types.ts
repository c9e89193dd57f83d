// The commitment's shapes: the stored record, the machine's input, context, events and the outputs of
// the actors the gateway provides (review, send).

export const COMMITMENT_KINDS = ["open_loop", "deadline_check", "event_check_in", "care_check_in"] as const;
export type CommitmentKind = (typeof COMMITMENT_KINDS)[number];

export const COMMITMENT_STATUSES = ["pending", "sent", "dismissed", "expired"] as const;
export type CommitmentStatus = (typeof COMMITMENT_STATUSES)[number];

export const CLASSIFICATIONS = [
  "still_pending_user",
  "still_pending_agent",
  "completed",
  "superseded",
  "unclear",
] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];

/** An inferred follow-up as stored: every time is milliseconds on the gateway's clock. */
export interface Commitment {
  id: string;
  /** The session that made it: its follow-up goes to that session, never elsewhere. */
  session: string;
  kind: CommitmentKind;
  /** Who proposed it: `tool`, `extractor`, an operator's label, ... */
  source: string;
  reason: string;
  /** A hint for the review; never sent as it is. */
  suggestedText: string;
  dedupeKey: string;
  confidence: number;
  dueWindow: { earliestAt: number; latestAt: number };
  /** The user message of the turn that made it; the review reads the conversation after it. */
  sourceMessageId?: string;
  sourceRunId?: string;
  createdAt: number;
  updatedAt: number;
  status: CommitmentStatus;
  /** When the next review may run (the index orders pending commitments by it). */
  dueAt: number;
  /** Reviews that ended without a decision; the retry backoff grows with it. */
  attempts: number;
  /** Past this time a pending commitment expires (latestAt + commitments.expireAfterMs). */
  expiresAt: number;
  classification?: Classification;
  /** Why it was dismissed: `completed`, `superseded`, `operator`. */
  dismissedWhy?: string;
  /** Durable intent written before the channel is called: a restart that finds it never sends again. */
  sending?: { at: number; text: string };
  sent?: {
    at: number;
    text: string;
    /** `committed`: the channel's receipt came back; `unknown`: a crash cut the send off (never resent). */
    receipt: "committed" | "unknown";
    messageId?: string;
  };
  endedAt?: number;
}

/** What the due actor starts from. */
export interface CommitmentInput {
  commitment: Commitment;
  /** Clock time when it fell due. */
  now: number;
  maxPerDay: number;
  /** Sends of this session in the rolling 24 h before `now`. */
  sentInWindow: number;
}

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

export interface SendInput {
  commitment: Commitment;
  text: string;
  classification: Classification | null;
}

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

export interface CommitmentOutput {
  retry: CommitmentContext["retry"];
  classification: Classification | null;
  why: string;
  text: string;
}
