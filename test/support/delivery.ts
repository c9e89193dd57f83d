import { expect } from "vitest";
import { DELIVERY_INTENT } from "../../src/ports/store.js";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { customs, eventsOf, type StoredRecord } from "./scenario.js";

// What the delivery and restart scenario tests share: the hidden record types, finals of the lengths
// the substantive rule tells apart, a scenario whose final may strand, and the marker checks
// (docs/architecture.md, invariant 6).

export const MARKER = "tiller.undelivered-final";
export const RECOVERED = "tiller.recovered";

/** Substantive: ≥ 280 characters. */
export const LONG =
  "Here is the migration plan. First, freeze writes to the legacy table for the duration of the copy. " +
  "Second, copy the rows in batches of ten thousand and verify the checksums after each batch. Third, " +
  "switch the readers to the new table and keep the old one for a week before dropping it.";
/** Between 120 and 280 characters with two sentences: substantive. */
export const MEDIUM_TWO_SENTENCES =
  "The nightly export failed because the disk on the reporting host is full. " +
  "I cleared the old archives and the next export will run at midnight as usual.";
/** Between 120 and 280 characters in one sentence: not substantive. */
export const MEDIUM_ONE_SENTENCE =
  "The nightly export failed because the disk on the reporting host is full and the old archives " +
  "from last spring were never rotated away";
/** Under 120 characters. */
export const SHORT = "Done: the orders table is migrated.";

/** What each record of a transcript is: its role, or the custom type of a hidden record. */
export function recordKinds(records: StoredRecord[]): unknown[] {
  return records.map((record) => (record.role === "custom" ? record.customType : record.role));
}

/** An auto-mode final that stranded and was resent once: its intent and receipt, marker, resend, proof. */
export const STRANDED_AND_RESENT = ["user", DELIVERY_INTENT, "assistant", MARKER, DELIVERY_INTENT, RECOVERED];

/** The session of strandScenario. */
export const STRANDED = "telegram:7";

/** One session, one inbound message, a model that answers `text` after 500 ms. */
export function strandScenario(options: {
  text: string;
  channel?: string;
  visibleReplies?: "auto" | "message_tool";
  extraRules?: string;
}): string {
  return `
name: a final that may strand
config:
  delivery: { visibleReplies: ${options.visibleReplies ?? "auto"} }
model:
${options.extraRules ?? ""}
  - reply: { delayMs: 500, text: ${JSON.stringify(options.text)} }
channels:
  telegram: ${options.channel ?? "{}"}
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
`;
}

export function eventIndex(result: ScenarioResult, type: string): number {
  return result.events.findIndex((event) => event.type === type);
}

export function deliveriesOf(result: ScenarioResult, kind: string) {
  return result.deliveries.filter((delivery) => delivery.kind === kind);
}

/**
 * The assistant record of `runId` is followed directly by exactly one marker that points at it, and the
 * transcript holds no other marker.
 */
export function expectMarkedOnce(
  records: StoredRecord[],
  runId: string,
  deliveryMode: "automatic" | "message_tool_only",
): StoredRecord {
  const finalIndex = records.findIndex((record) => record.role === "assistant" && record.runId === runId);
  const final = records[finalIndex];
  expect(final, `assistant record of ${runId}`).toMatchObject({ role: "assistant", delivered: false });
  expect(final).not.toHaveProperty("deliveryMessageId");
  const markers = customs(records, MARKER);
  expect(markers).toHaveLength(1);
  const marker = records[finalIndex + 1];
  expect(marker).toBe(markers[0]);
  expect(marker).toMatchObject({ role: "custom", customType: MARKER, display: false });
  expect(marker?.role === "custom" ? marker.details : undefined).toEqual({
    deliveryMode,
    delivered: false,
    finalSeq: final?.seq,
    finalTextLength: final?.role === "assistant" ? (final.text ?? "").length : -1,
  });
  expect(marker?.seq).toBeGreaterThan(final?.seq ?? 0);
  return final!;
}

/** marker.appended (durable) comes before recovery.queued, each exactly once (invariant 6). */
export function expectMarkerBeforeRecovery(result: ScenarioResult): void {
  expect(eventsOf(result, "marker.appended")).toHaveLength(1);
  expect(eventsOf(result, "recovery.queued")).toHaveLength(1);
  expect(eventIndex(result, "marker.appended")).toBeGreaterThanOrEqual(0);
  expect(eventIndex(result, "marker.appended")).toBeLessThan(eventIndex(result, "recovery.queued"));
}
