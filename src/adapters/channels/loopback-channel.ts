import type {
  Channel,
  ChannelCallOptions,
  DeliveryReceipt,
  EditTarget,
  OutboundMessage,
  ReconcileResult,
} from "../../ports/channel.js";
import { type Clock, sleep } from "../../ports/clock.js";

export interface LoopbackOptions {
  /** The first N sends reject, as a flaky network would. @default 0 */
  failSends?: number;
  /** Receipts come back without a messageId (an API that accepted but did not commit). @default false */
  omitMessageId?: boolean;
  /** Clock for the `at` of each send. @default `Date.now` */
  now?: () => number;
  /**
   * Each send takes this long on `clock` before it is answered, as a real network would.
   * @default 0 (answered at once)
   */
  sendDelayMs?: number;
  /** The clock `sendDelayMs` waits on; without one sends are answered at once. */
  clock?: Clock;
  /**
   * Errors the next sends reject with, one per send, in order (a `ChannelSendError` with
   * `retryAfterMs`, `permanent` or `outcome`), before `failSends` is looked at. With `deliver: true`
   * the message is kept as delivered first (a platform that took it and then failed the answer).
   * @default []
   */
  faults?: Array<{ error: Error; deliver?: boolean }>;
  /** Texts longer than this are split by the gateway (the `maxLength` capability). @default none (no limit) */
  maxLength?: number;
  /** Offer `edit`, `typing` and `react`, recorded in `edits`, `typings` and `reactions`. @default {} (none) */
  capabilities?: { edit?: boolean; typing?: boolean; react?: boolean; reconcile?: boolean };
}

export interface LoopbackEdit {
  at: number;
  session: string;
  messageId: string;
  text: string;
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
  readonly edits: LoopbackEdit[] = [];
  readonly typings: Array<{ at: number; session: string }> = [];
  readonly reactions: Array<{ at: number; session: string; messageId: string; reaction: string }> = [];
  /** Each send's abort signal, in order: a test checks it aborted on the timeout. */
  readonly signals: AbortSignal[] = [];
  readonly maxLength?: number;
  readonly edit?: (target: EditTarget, text: string, options: ChannelCallOptions) => Promise<unknown>;
  readonly typing?: (session: string) => unknown;
  readonly react?: (session: string, messageId: string, reaction: string) => unknown;
  readonly reconcile?: (deliveryId: string) => Promise<ReconcileResult>;
  private failuresLeft: number;
  private counter = 0;

  constructor(private readonly options: LoopbackOptions = {}) {
    this.failuresLeft = options.failSends ?? 0;
    if (options.maxLength !== undefined) this.maxLength = options.maxLength;
    const can = options.capabilities ?? {};
    const at = () => this.options.now?.() ?? Date.now();
    if (can.edit)
      this.edit = async (target, text) => {
        const sent = this.sent.find((item) => item.ok && item.messageId === target.messageId);
        if (!sent) throw new Error(`loopback channel: no message ${target.messageId} to edit`);
        sent.text = text;
        this.edits.push({ at: at(), session: target.session, messageId: target.messageId, text });
        return { messageId: target.messageId };
      };
    if (can.typing) this.typing = (session) => this.typings.push({ at: at(), session });
    if (can.react)
      this.react = (session, messageId, reaction) =>
        this.reactions.push({ at: at(), session, messageId, reaction });
    if (can.reconcile)
      this.reconcile = async (deliveryId) => {
        const messageId = this.committed.get(deliveryId);
        return messageId ? { delivered: true, messageId } : { delivered: false };
      };
  }

  async send(message: OutboundMessage, options?: ChannelCallOptions): Promise<DeliveryReceipt> {
    if (options?.signal) this.signals.push(options.signal);
    // The delay ignores the signal on purpose: a platform that posts whatever the caller gave up on.
    if (this.options.sendDelayMs && this.options.clock)
      await sleep(this.options.clock, this.options.sendDelayMs);
    const fault = this.options.faults?.shift();
    if (fault) {
      if (fault.deliver) this.take(message);
      else this.sent.push({ ...message, at: this.options.now?.() ?? Date.now(), ok: false });
      throw fault.error;
    }
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
    return this.take(message);
  }

  private take(message: OutboundMessage): DeliveryReceipt {
    const at = this.options.now?.() ?? Date.now();
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
