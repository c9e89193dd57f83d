import { parseConfig } from "../config.js";
import type { Commitment } from "../machines/commitment.types.js";
import { DEFAULT_EXPIRE_AFTER_MS, DEFAULT_WINDOW_MS } from "../policy/commitment-fields.js";
import type { TranscriptStore } from "../ports/store.js";
import type { Scenario } from "./schema.js";

/**
 * Stores a scenario's pre-existing commitments (those the store does not hold yet, so a resumed
 * `--store` run does not add them twice) and returns the id maker of new ones: `commitment-1`,
 * `commitment-2`, ... continuing after the highest the store holds.
 */
export async function scenarioCommitments(scenario: Scenario, store: TranscriptStore): Promise<() => string> {
  const stored = (await store.loadCommitments?.()) ?? [];
  const known = new Set(stored.map((record) => record.id));
  const expireAfterMs =
    parseConfig(scenario.config ?? {}).commitments.expireAfterMs ?? DEFAULT_EXPIRE_AFTER_MS;
  const fresh: Commitment[] = [];
  for (const given of scenario.commitments) {
    if (known.has(given.id)) continue;
    const earliestAt = given.dueWindow?.earliestMs ?? given.dueAt;
    const latestAt = Math.max(given.dueWindow?.latestMs ?? earliestAt + DEFAULT_WINDOW_MS, earliestAt);
    const createdAt = given.createdAt ?? 0;
    fresh.push({
      id: given.id,
      session: given.session,
      kind: given.kind,
      source: given.source,
      reason: given.reason,
      suggestedText: given.suggestedText,
      dedupeKey: given.dedupeKey,
      confidence: given.confidence,
      dueWindow: { earliestAt, latestAt },
      ...(given.sourceMessageId ? { sourceMessageId: given.sourceMessageId } : {}),
      ...(given.sourceRunId ? { sourceRunId: given.sourceRunId } : {}),
      createdAt,
      updatedAt: createdAt,
      status: given.status,
      dueAt: given.dueAt,
      attempts: 0,
      expiresAt: latestAt + expireAfterMs,
    });
  }
  if (fresh.length > 0) await store.saveCommitments?.(fresh);
  let highest = 0;
  for (const id of [...known, ...fresh.map((commitment) => commitment.id)]) {
    const match = /^commitment-(\d+)$/.exec(id);
    if (match) highest = Math.max(highest, Number(match[1]));
  }
  return () => `commitment-${++highest}`;
}
