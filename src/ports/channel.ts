/**
 * The channel port: how text reaches a user. A send counts as delivered only when the receipt carries a
 * top-level `messageId` (docs/architecture.md); a rejection or a receipt without it is a failed delivery.
 * Only `send` is required; every other member is a capability a platform may have (docs/channels.md).
 *
 * @example
 * ```ts
 * const receipt = await channel.send(
 *   { session: "telegram:42", text: "hi", kind: "reply", deliveryId: "ack:telegram:42:m1" },
 *   { signal: AbortSignal.timeout(30_000) },
 * );
 * const delivered = typeof receipt.messageId === "string";
 * ```
 */
export interface Channel {
  /**
   * Posts one message. When `delivery.sendTimeoutMs` passes, Tiller aborts `options.signal` and waits
   * for this promise to settle before it decides anything: a receipt that arrives late still counts as
   * delivered. Reject with a `ChannelSendError` to say whether the platform may have the message
   * (`outcome`), whether to try again later (`retryAfterMs`) or never (`permanent`).
   */
  send(message: OutboundMessage, options?: ChannelCallOptions): Promise<DeliveryReceipt>;
  /**
   * The longest text one message may carry; a longer one is split at paragraph, then sentence, then
   * word boundaries, each part sent under the deliveryId `<id>#1`, `<id>#2`, ….
   */
  readonly maxLength?: number;
  /**
   * Replaces the text of a message this channel sent (streaming previews, `delivery.streaming`).
   * Rejects like `send`.
   */
  edit?(target: EditTarget, text: string, options: ChannelCallOptions): Promise<unknown>;
  /** Shows that a reply is being written; Tiller calls it while a turn runs, at most every 4 s. */
  typing?(session: string): unknown;
  /**
   * Puts a reaction on an inbound message (`delivery.ackReactions`). `reaction` is one emoji of
   * {@link ACK_REACTIONS}; a platform that names its reactions maps it.
   */
  react?(session: string, messageId: string, reaction: string): unknown;
  /**
   * Whether a send whose outcome is unknown reached the platform. Answer `{ delivered: false }` only
   * when sure; Tiller then resends it under the same deliveryId. Without this member, or when it
   * throws, a send of unknown outcome is never resent.
   */
  reconcile?(deliveryId: string): Promise<ReconcileResult>;
  /**
   * True only for a channel that stores each `deliveryId` of a session at most once, atomically, for
   * every process that may send to the session (not per process: a store they all share), and answers a
   * repeat with the first receipt. A store shared by several processes then calls it without a claim of
   * the send (two statements fewer per send; docs/postgres.md): two processes sending the same delivery
   * at once show it once, and a send of unknown outcome may be repeated. It covers every delivery made
   * under a `deliveryId`, the final's `edit` of its preview included. The `web` channel on the shared
   * PostgreSQL delivery log declares it; on a file or memory log (one process's) it does not.
   */
  readonly dedupesDeliveryIds?: boolean;
}

/** The second argument of `send` and `edit`. */
export interface ChannelCallOptions {
  /** Aborted when `delivery.sendTimeoutMs` passes or the gateway stops; the call should give up. */
  signal: AbortSignal;
}

/** A message `edit` replaces the text of. */
export interface EditTarget {
  session: string;
  /** The receipt's messageId of the message to edit. */
  messageId: string;
  /**
   * For a preview's own edits, the deliveryId it was sent under (`preview:<runId>`, see
   * {@link PREVIEW_DELIVERY_PREFIX}); for the final that replaces a preview, the final's deliveryId:
   * that edit is the final's delivery.
   */
  deliveryId?: string;
  /** The thread it was sent in, when the platform has threads. */
  thread?: string;
}

/**
 * The deliveryId of a streaming preview's first send and of its edits is this prefix and the run id:
 * a channel that keeps a send ledger can find, after a crash, a preview that was never replaced by its
 * final and edit it to {@link DISCARDED_PREVIEW_TEXT}.
 */
export const PREVIEW_DELIVERY_PREFIX = "preview:";

/** What a preview shows once its draft will never become an answer (stopped, failed, cut by a crash). */
export const DISCARDED_PREVIEW_TEXT = "(This draft was discarded.)";

/** What `reconcile` found out. */
export type ReconcileResult = { delivered: true; messageId: string } | { delivered: false };

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
   * every send; it is optional only so that code calling a channel directly need not invent one. A
   * split text's parts carry `<id>#1`, `<id>#2`, ….
   */
  deliveryId?: string;
  /** The platform id of the message this answers: the `replyTo` of the newest user message it answers. */
  replyTo?: string;
  /** The thread of the message this answers (`InboundMessage.thread`). */
  thread?: string;
  /** For one part of a split text: its 1-based index and the number of parts. */
  part?: { index: number; count: number };
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

/**
 * The reaction put on an inbound message for each ack disposition when `delivery.ackReactions` is on
 * (dispositions without one get none). All are in Telegram's allowed set; Slack adapters map them to
 * names (`eyes`, `writing_hand`, `ok_hand`, `zap`, `no_entry_sign`).
 */
export const ACK_REACTIONS: Readonly<Record<string, string>> = {
  started: "👀",
  steered: "✍",
  queued: "👌",
  collected: "👌",
  interrupted: "⚡",
  rejected: "🤷",
};

/**
 * `inner` with its `send` replaced by `send` and every optional capability passed through as it is, so a
 * wrapper that observes sends (metrics, traces) never hides `edit`, `typing`, `react`, `reconcile`,
 * `maxLength` or `dedupesDeliveryIds` from the gateway.
 */
export function withSend(inner: Channel, send: Channel["send"]): Channel {
  const wrapped: { -readonly [K in keyof Channel]: Channel[K] } = { send };
  if (inner.maxLength !== undefined) wrapped.maxLength = inner.maxLength;
  if (inner.dedupesDeliveryIds !== undefined) wrapped.dedupesDeliveryIds = inner.dedupesDeliveryIds;
  if (inner.edit)
    wrapped.edit = (target, text, options) =>
      (inner.edit as NonNullable<Channel["edit"]>).call(inner, target, text, options);
  if (inner.typing)
    wrapped.typing = (session) => (inner.typing as NonNullable<Channel["typing"]>).call(inner, session);
  if (inner.react)
    wrapped.react = (session, messageId, reaction) =>
      (inner.react as NonNullable<Channel["react"]>).call(inner, session, messageId, reaction);
  if (inner.reconcile)
    wrapped.reconcile = (deliveryId) =>
      (inner.reconcile as NonNullable<Channel["reconcile"]>).call(inner, deliveryId);
  return wrapped;
}
