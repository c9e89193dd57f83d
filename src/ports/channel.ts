/**
 * The channel port: how text reaches a user. A send counts as delivered only when the receipt carries a
 * top-level `messageId` (docs/architecture.md); a rejection or a receipt without it is a failed delivery.
 *
 * @example
 * ```ts
 * const receipt = await channel.send({ session: "telegram:42", text: "hi", kind: "reply", deliveryId: "ack:telegram:42:m1" });
 * const delivered = typeof receipt.messageId === "string";
 * ```
 */
export interface Channel {
  send(message: OutboundMessage): Promise<DeliveryReceipt>;
}

export type DeliveryKind = "reply" | "ack" | "recovery" | "notice" | "commitment";

/** What the gateway hands a channel to send: the session, the text and a stable `deliveryId`. */
export interface OutboundMessage {
  session: string;
  text: string;
  kind: DeliveryKind;
  runId?: string;
  /**
   * Stable for one logical delivery across retries and restarts (derived from what is delivered: the
   * stored final, the recovery, the notice, the ack), never from a run id. A channel that sees the same
   * id twice should drop the second send and answer with the first receipt. The gateway sets it on
   * every send; it is optional only so that code calling a channel directly need not invent one.
   */
  deliveryId?: string;
}

/** What a channel answers for a send that reached the platform: its `messageId`. */
export interface DeliveryReceipt {
  messageId?: string;
  [field: string]: unknown;
}

/** Whether a receipt proves delivery. */
export function isCommitted(
  receipt: DeliveryReceipt | undefined,
): receipt is DeliveryReceipt & { messageId: string } {
  return typeof receipt?.messageId === "string" && receipt.messageId.length > 0;
}
