import type { Channel, DeliveryReceipt, OutboundMessage } from "../../ports/channel.js";
import { type Clock, sleep } from "../../ports/clock.js";

export interface LoopbackOptions {
  /** The first N sends reject, as a flaky network would. */
  failSends?: number;
  /** Receipts come back without a messageId (an API that accepted but did not commit). */
  omitMessageId?: boolean;
  now?: () => number;
  /** Each send takes this long on `clock` before it is answered, as a real network would. */
  sendDelayMs?: number;
  clock?: Clock;
}

export interface LoopbackDelivery extends OutboundMessage {
  at: number;
  messageId?: string;
  ok: boolean;
}

/**
 * A channel that keeps what it is sent, with injectable faults; scenarios and tests read `sent`. A send
 * whose `deliveryId` it already took is dropped (not added to `sent`, counted in `duplicates`) and
 * answered with the first receipt, so a resend after a crash never shows the user a reply twice.
 *
 * @example
 * ```ts
 * const channel = new LoopbackChannel({ failSends: 1 });
 * await channel.send({ session: "s", text: "hi", kind: "reply", deliveryId: "d1" }).catch(() => "first send fails");
 * ```
 */
export class LoopbackChannel implements Channel {
  readonly sent: LoopbackDelivery[] = [];
  /** Sends dropped because their deliveryId was already committed. */
  readonly duplicates: OutboundMessage[] = [];
  /** deliveryId → the messageId it was taken under ("" when the receipt omitted it). */
  private readonly committed = new Map<string, string>();
  private failuresLeft: number;
  private counter = 0;

  constructor(private readonly options: LoopbackOptions = {}) {
    this.failuresLeft = options.failSends ?? 0;
  }

  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    if (this.options.sendDelayMs && this.options.clock)
      await sleep(this.options.clock, this.options.sendDelayMs);
    const at = this.options.now?.() ?? Date.now();
    const earlier = message.deliveryId ? this.committed.get(message.deliveryId) : undefined;
    if (earlier !== undefined) {
      this.duplicates.push(message);
      return earlier ? { messageId: earlier, duplicate: true } : { status: "accepted", duplicate: true };
    }
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      this.sent.push({ ...message, at, ok: false });
      throw new Error("loopback channel: send failed (injected fault)");
    }
    this.counter++;
    if (this.options.omitMessageId) {
      if (message.deliveryId) this.committed.set(message.deliveryId, "");
      this.sent.push({ ...message, at, ok: true });
      return { status: "accepted" };
    }
    const messageId = `out-${this.counter}`;
    if (message.deliveryId) this.committed.set(message.deliveryId, messageId);
    this.sent.push({ ...message, at, ok: true, messageId });
    return { messageId };
  }
}
