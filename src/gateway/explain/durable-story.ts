import { isFinalIntent } from "../../policy/delivery-ledger.js";
import { RECOVERED } from "../../policy/turn-context.js";
import type { TranscriptRecord } from "../../ports/store.js";

/** What the transcript alone tells about one user message (after a restart, nothing else is left). */
export interface DurableStory {
  arrivedAt: number;
  /** The final that answered it, and whether the user got it (directly or by its recovery). */
  answeredBy?: { runId: string; delivered: boolean; at: number };
  /** The run whose final is stored only as a delivery intent (its resend decides the outcome). */
  sendingRun?: string;
}

/**
 * Reads each user message's story from the transcript: the first final after it answered it (a
 * steered message shares the final of its turn), delivered when its receipt says so or a later
 * `tiller.recovered` proves the recovery reached the user.
 *
 * @example
 * ```ts
 * storyFromTranscript(await store.readWindow("telegram:42")).get("m1")?.answeredBy?.delivered;
 * ```
 */
export function storyFromTranscript(records: readonly TranscriptRecord[]): Map<string, DurableStory> {
  const stories = new Map<string, DurableStory>();
  const waiting: string[] = [];
  for (const [index, record] of records.entries()) {
    if (record.role === "user") {
      stories.set(record.messageId, { arrivedAt: record.at });
      waiting.push(record.messageId);
      continue;
    }
    if (record.role === "assistant" && waiting.length > 0) {
      const delivered =
        record.delivered ||
        records
          .slice(index + 1)
          .some(
            (later) =>
              later.role === "custom" &&
              later.customType === RECOVERED &&
              later.details.strandedRunId === record.runId &&
              later.details.recovered === true,
          );
      for (const id of waiting.splice(0))
        stories.set(id, {
          ...stories.get(id)!,
          answeredBy: { runId: record.runId, delivered, at: record.at },
        });
      continue;
    }
    if (isFinalIntent(record, null) && waiting.length > 0 && record.role === "custom") {
      const runId = String(record.details.runId ?? "");
      // The assistant record (its receipt) may still follow; until then the resend will tell.
      const receipted = records
        .slice(index + 1)
        .some((later) => later.role === "assistant" && later.runId === runId);
      if (!receipted)
        for (const id of waiting.splice(0)) stories.set(id, { ...stories.get(id)!, sendingRun: runId });
    }
  }
  return stories;
}
