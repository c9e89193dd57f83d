import {
  DELIVERY_INTENT,
  DELIVERY_RECEIPT,
  type DeliveryKindName,
  type TranscriptRecord,
} from "../ports/store.js";
import { RECOVERED } from "./turn-context.js";

/**
 * The delivery ledger (docs/guarantees.md) read from a transcript: every send
 * is preceded by a durable intent and followed by its receipt, so a restart can tell the sends whose
 * outcome it does not know (an intent and no receipt after it) and resend each once, under the same
 * deliveryId.
 *
 * @example
 * ```ts
 * unreceiptedIntents(await store.readWindow("telegram:42")); // [{ deliveryId: "reply:r7", ... }]
 * ```
 */
export interface OpenIntent {
  deliveryId: string;
  kind: DeliveryKindName;
  text: string;
  runId: string;
  /** A turn's final (its receipt is the assistant record), rather than a message-tool send or notice. */
  final: boolean;
  channel?: string;
  /** Threading the first send carried, so the resend answers the same message. */
  replyTo?: string;
  thread?: string;
  /** For a split text: the parts whose own receipts are durable (part number → messageId). */
  parts?: Record<string, string>;
  seq: number;
}

/** The deliveryId an intent record stands for. */
export function intentDeliveryId(record: TranscriptRecord): string {
  if (record.role !== "custom") return "";
  const given = record.details.deliveryId;
  return typeof given === "string" && given
    ? given
    : `${String(record.details.kind ?? "reply")}:${record.id}`;
}

/** The deliveryId a record is the receipt of, if it is one. */
export function receiptOf(record: TranscriptRecord): string | undefined {
  if (record.role === "assistant") return record.deliveryId;
  if (record.role !== "custom") return undefined;
  if (record.customType !== DELIVERY_RECEIPT && record.customType !== RECOVERED) return undefined;
  const id = record.details.deliveryId;
  return typeof id === "string" && id ? id : undefined;
}

/** Intents with no receipt after them, in transcript order. */
export function unreceiptedIntents(records: readonly TranscriptRecord[]): OpenIntent[] {
  const open = new Map<string, OpenIntent>();
  for (const record of records) {
    const receipt = receiptOf(record);
    if (receipt !== undefined) open.delete(receipt);
    const part = receipt === undefined ? undefined : /^(.*)#(\d+)$/.exec(receipt);
    const whole = part?.[1] === undefined ? undefined : open.get(part[1]);
    if (part?.[2] && whole && record.role === "custom" && typeof record.details.messageId === "string")
      whole.parts = { ...whole.parts, [part[2]]: record.details.messageId };
    if (record.role !== "custom" || record.customType !== DELIVERY_INTENT) continue;
    const deliveryId = intentDeliveryId(record);
    const { details } = record;
    open.set(deliveryId, {
      deliveryId,
      kind: (details.kind as DeliveryKindName) ?? "reply",
      text: String(details.text ?? ""),
      runId: String(details.runId ?? ""),
      final: details.final === true,
      ...(typeof details.channel === "string" ? { channel: details.channel } : {}),
      ...(typeof details.replyTo === "string" ? { replyTo: details.replyTo } : {}),
      ...(typeof details.thread === "string" ? { thread: details.thread } : {}),
      seq: record.seq,
    });
  }
  return [...open.values()];
}

/** Whether the record is the intent of run `runId`'s final: the turn reached its final. */
export function isFinalIntent(record: TranscriptRecord, runId: string | null): boolean {
  return (
    record.role === "custom" &&
    record.customType === DELIVERY_INTENT &&
    record.details.final === true &&
    (runId === null || record.details.runId === runId)
  );
}
