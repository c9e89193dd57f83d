// A commitment as the store keeps it: the record, its kinds, statuses and review classes.

export const COMMITMENT_KINDS = ["open_loop", "deadline_check", "event_check_in", "care_check_in"] as const;
export type CommitmentKind = (typeof COMMITMENT_KINDS)[number];

export const COMMITMENT_STATUSES = ["pending", "sent", "dismissed", "expired"] as const;
/** Where a commitment stands: `pending`, `sent`, `dismissed` or `expired`. */
export type CommitmentStatus = (typeof COMMITMENT_STATUSES)[number];

export const CLASSIFICATIONS = [
  "still_pending_user",
  "still_pending_agent",
  "completed",
  "superseded",
  "unclear",
] as const;
/** What a commitment review found: still pending on either side, completed, superseded or unclear. */
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
