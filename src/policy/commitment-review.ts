import type { Classification, Commitment } from "../ports/commitment.js";
import type { TranscriptRecord } from "../ports/store.js";

/**
 * The review policy of commitments (docs/commitments.md), as pure functions the commitment machine's guards
 * and the review actor call.
 *
 * **Where the conversation "since" begins.** The anchor is the last record that belongs to the turn
 * that made the commitment: its source user message (`sourceMessageId`) and every record of its source
 * run (`sourceRunId`). The assistant's own words in that turn (the question that opened the loop) are
 * therefore not "after" it. A commitment that names neither (an operator's) is anchored at its creation
 * time.
 *
 * **Settled without a model.** After the anchor, only what the user saw counts: user messages, and
 * assistant replies that were delivered (check-ins sent for commitments excluded). The transcript
 * settles the commitment when a user message is followed by a delivered assistant reply: the user
 * answered or corrected, and the assistant went on from there. It is `superseded` when a user message
 * in between reads as a correction ("actually", "instead", "remove", "replace", ...), else `completed`.
 * A `/new` after the source (the source belongs to an older revision than the transcript's newest
 * record) supersedes it too: that conversation ended. Anything else goes to a model review.
 *
 * **What may be sent.** Only a model review's decision `still_pending_user` / `still_pending_agent`
 * with its own non-empty `text`, not voided by a user message during the review, within `maxPerDay`;
 * a `text` equal to the stored `suggestedText` after normalising case and spaces is no decision.
 *
 * @example
 * ```ts
 * const verdict = settledByTranscript(await store.read(commitment.session), commitment);
 * if (verdict.settled) dismiss(commitment, verdict.classification);
 * ```
 */
export type SettledVerdict =
  | { settled: true; classification: "completed" | "superseded"; why: string }
  | { settled: false; why: string };

/** The longest follow-up a review may compose. */
export const MAX_FOLLOW_UP_CHARS = 2000;

const CORRECTION =
  /\b(?:actually|instead|correction|rather|remove|replace|swap|drop|scratch that|i meant|not that|wrong|change (?:it|that|the))\b/i;

/** A check-in sent for a commitment is stored with this run id prefix. */
export const CHECK_IN_RUN_PREFIX = "commitment:";

/** Index in `records` of the anchor (see above); -1 when the conversation since is all of `records`. */
export function anchorIndex(records: readonly TranscriptRecord[], commitment: Commitment): number {
  let anchor = -1;
  let found = false;
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    const ofSource =
      (record.role === "user" &&
        commitment.sourceMessageId !== undefined &&
        record.messageId === commitment.sourceMessageId) ||
      (commitment.sourceRunId !== undefined && "runId" in record && record.runId === commitment.sourceRunId);
    if (ofSource) {
      anchor = i;
      found = true;
    }
  }
  if (found) return anchor;
  // No source in the transcript: what came after the commitment was made.
  for (let i = 0; i < records.length; i++) if (records[i]!.at > commitment.createdAt) return i - 1;
  return records.length - 1;
}

/** Index of the first record of the source turn (its user message, or its first record). */
export function sourceStartIndex(records: readonly TranscriptRecord[], commitment: Commitment): number {
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    if (record.role === "user" && record.messageId === commitment.sourceMessageId) return i;
    if (commitment.sourceRunId !== undefined && "runId" in record && record.runId === commitment.sourceRunId)
      return i;
  }
  return anchorIndex(records, commitment) + 1;
}

/** Whether the transcript alone settles the commitment (no model call). */
export function settledByTranscript(
  records: readonly TranscriptRecord[],
  commitment: Commitment,
): SettledVerdict {
  const anchor = anchorIndex(records, commitment);
  const source = anchor >= 0 ? records[anchor] : undefined;
  const newest = records.at(-1);
  if (source && newest && newest.revision > source.revision)
    return { settled: true, classification: "superseded", why: "the conversation was restarted with /new" };
  let userAt = -1;
  let corrected = false;
  for (let i = anchor + 1; i < records.length; i++) {
    const record = records[i]!;
    if (record.role === "user") {
      if (userAt < 0) userAt = i;
      if (CORRECTION.test(record.text)) corrected = true;
    } else if (record.role === "assistant" && userAt >= 0 && isVisibleReply(record)) {
      return corrected
        ? { settled: true, classification: "superseded", why: "the user corrected it and the reply went on" }
        : { settled: true, classification: "completed", why: "the user answered and the reply went on" };
    }
  }
  return {
    settled: false,
    why: userAt >= 0 ? "the user wrote but no reply followed" : "nothing the user said since",
  };
}

function isVisibleReply(record: TranscriptRecord & { role: "assistant" }): boolean {
  return record.delivered && !record.runId.startsWith(CHECK_IN_RUN_PREFIX);
}

/** Case and runs of white space do not make a different text. */
export function normalizeText(text: string): string {
  return text.toLowerCase().replace(/\s+/g, " ").trim();
}

export function isStillPending(classification: Classification | null): boolean {
  return classification === "still_pending_user" || classification === "still_pending_agent";
}

/**
 * Why a review's `text` cannot be sent ("" when it can): empty, too long, the stored suggestion again,
 * or carrying the review's fence (the untrusted record leaking out).
 */
export function followUpProblem(text: string, commitment: Commitment, fenceNonce?: string): string {
  const normalized = normalizeText(text);
  if (normalized.length === 0) return "the review composed no text";
  if (text.length > MAX_FOLLOW_UP_CHARS) return `the text is longer than ${MAX_FOLLOW_UP_CHARS} characters`;
  if (normalized === normalizeText(commitment.suggestedText))
    return "the text is the stored suggestion, not composed from the current state";
  if (fenceNonce && text.includes(fenceNonce)) return "the text carries the review's fence";
  return "";
}

/**
 * The guard in front of every send (invariant 10): a still-pending decision of a model review, not
 * voided, with a text that may be sent, within the session's daily limit.
 */
export function maySend(
  decision: { voided: boolean; classification: Classification | null; text: string; via: string },
  commitment: Commitment,
  sentInWindow: number,
  maxPerDay: number,
): boolean {
  return (
    !decision.voided &&
    decision.via === "model" &&
    isStillPending(decision.classification) &&
    followUpProblem(decision.text, commitment) === "" &&
    sentInWindow < maxPerDay
  );
}

/** When the next review may run after one without a decision: one heartbeat, doubling, at most 24 h. */
export function retryDelay(attempts: number, heartbeatMs: number): number {
  const doubled = heartbeatMs * 2 ** Math.max(0, Math.min(attempts - 1, 20));
  return Math.max(heartbeatMs, Math.min(doubled, 24 * 3_600_000));
}
