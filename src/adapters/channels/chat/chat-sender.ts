import { ChannelSendError } from "../../../errors.js";
import type { DeliveryReceipt, OutboundMessage } from "../../../ports/channel.js";
import type { SendLedger } from "./send-ledger.js";
import { splitText } from "./split-text.js";

/** One platform's side of a send: post one part, and map the platform's errors. */
export interface PlatformPoster {
  /**
   * Posts one part (`partId`: its ledger id); resolves with the platform's message id. It takes no
   * abort signal: a post in flight is never aborted, so a reply the platform shows is never lost.
   */
  post(message: OutboundMessage, text: string, partId: string): Promise<string>;
  /** Whether a part begun by an earlier process reached the platform (Slack can tell; Telegram cannot). */
  reconcile?(partId: string): Promise<{ delivered: true; messageId: string } | { delivered: false }>;
  /** The platform error as a `ChannelSendError` (transient, permanent or unknown outcome). */
  classify(error: unknown, signal: AbortSignal | undefined): ChannelSendError;
  /** The conversation a send goes to, for the per-conversation 429 cool-down. */
  conversation(session: string): string;
}

/**
 * The platform-independent half of a chat channel's `send`: exactly one post per deliveryId. A
 * deliveryId already committed in the ledger answers with its receipt and posts nothing; one in flight
 * in this process is joined, not posted again; one begun by a process that died is reconciled with the
 * platform where it can be and otherwise refused with `outcome: "unknown"` (never re-posted). A text
 * longer than `maxLength` is posted in parts, each with its own ledger entry (`<id>/1`, `<id>/2`), so a
 * resend after a crash posts only the parts the platform does not have. After a 429 the conversation
 * is left alone for the `retryAfterMs` the platform asked for.
 */
export class ChatSender {
  private readonly inFlight = new Map<string, Promise<DeliveryReceipt>>();
  private readonly coolDown = new Map<string, number>();
  private counter = 0;

  constructor(
    private readonly platform: PlatformPoster,
    private readonly ledger: SendLedger,
    private readonly maxLength: number,
    private readonly now: () => number = Date.now,
  ) {}

  send(message: OutboundMessage, signal?: AbortSignal): Promise<DeliveryReceipt> {
    const deliveryId = message.deliveryId ?? `adhoc:${this.now()}:${++this.counter}`;
    const running = this.inFlight.get(deliveryId);
    if (running) return running;
    const sending = this.sendParts(message, deliveryId, signal).finally(() =>
      this.inFlight.delete(deliveryId),
    );
    this.inFlight.set(deliveryId, sending);
    return sending;
  }

  /** Waits out a 429 of the conversation before any call to it (a send, an edit, a typing action). */
  async waitTurn(session: string, signal?: AbortSignal): Promise<void> {
    const until = this.coolDown.get(this.platform.conversation(session)) ?? 0;
    const wait = until - this.now();
    if (wait > 0) await abortableDelay(wait, signal);
  }

  /** Remembers a 429 of the conversation. */
  noteRateLimit(session: string, error: ChannelSendError): void {
    if (error.retryAfterMs !== undefined)
      this.coolDown.set(this.platform.conversation(session), this.now() + error.retryAfterMs);
  }

  private async sendParts(
    message: OutboundMessage,
    deliveryId: string,
    signal: AbortSignal | undefined,
  ): Promise<DeliveryReceipt> {
    const parts = splitText(message.text, this.maxLength);
    const ids: string[] = [];
    for (const [index, text] of parts.entries()) {
      const partId = parts.length === 1 ? deliveryId : `${deliveryId}/${index + 1}`;
      ids.push(await this.sendPart(message, partId, text, signal));
    }
    const first = ids[0]!;
    return parts.length === 1 ? { messageId: first } : { messageId: first, messageIds: ids };
  }

  private async sendPart(
    message: OutboundMessage,
    partId: string,
    text: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const known = this.ledger.get(partId);
    if (known?.messageIds?.[0]) return known.messageIds[0];
    if (known) {
      // Begun by a process that died before the platform answered.
      if (!this.platform.reconcile)
        throw new ChannelSendError(
          `${partId}: an earlier process sent this and died before the answer; not re-posted, the platform may have it`,
          { outcome: "unknown" },
        );
      const found = await this.platform.reconcile(partId);
      if (found.delivered) {
        await this.ledger.commit(partId, [found.messageId]);
        return found.messageId;
      }
    }
    await this.waitTurn(message.session, signal);
    await this.ledger.begin(partId, message.session, this.now());
    let messageId: string;
    try {
      // The post itself is not aborted: once its request may have left, aborting only turns a reply the
      // platform will show into one of unknown outcome. Tiller waits for it to settle (the signal still
      // cuts the waits before it).
      messageId = await this.platform.post(message, text, partId);
    } catch (error) {
      const failure = this.platform.classify(error, signal);
      this.noteRateLimit(message.session, failure);
      // Only a send the platform certainly lacks may be posted again.
      if (failure.outcome === "not-delivered") await this.ledger.abandon(partId);
      throw failure;
    }
    await this.ledger.commit(partId, [messageId]);
    return messageId;
  }
}

function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ChannelSendError("aborted while waiting out a rate limit", { outcome: "not-delivered" }));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ChannelSendError("aborted while waiting out a rate limit", { outcome: "not-delivered" }));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
