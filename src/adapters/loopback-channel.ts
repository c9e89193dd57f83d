import type { Channel, DeliveryReceipt, OutboundMessage } from "./channel.js";
import { type Clock, sleep } from "./clock.js";

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
 * A channel that keeps what it is sent, with injectable faults; scenarios and tests read `sent`.
 *
 * @example
 * ```ts
 * const channel = new LoopbackChannel({ failSends: 1 });
 * await channel.send({ session: "s", text: "hi", kind: "reply" }).catch(() => "first send fails");
 * ```
 */
export class LoopbackChannel implements Channel {
  readonly sent: LoopbackDelivery[] = [];
  private failuresLeft: number;
  private counter = 0;

  constructor(private readonly options: LoopbackOptions = {}) {
    this.failuresLeft = options.failSends ?? 0;
  }

  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    if (this.options.sendDelayMs && this.options.clock)
      await sleep(this.options.clock, this.options.sendDelayMs);
    const at = this.options.now?.() ?? Date.now();
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      this.sent.push({ ...message, at, ok: false });
      throw new Error("loopback channel: send failed (injected fault)");
    }
    this.counter++;
    if (this.options.omitMessageId) {
      this.sent.push({ ...message, at, ok: true });
      return { status: "accepted" };
    }
    const messageId = `out-${this.counter}`;
    this.sent.push({ ...message, at, ok: true, messageId });
    return { messageId };
  }
}
