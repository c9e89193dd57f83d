import { errorMessage } from "../errors.js";
import { splitText } from "../policy/split-text.js";
import type { DeliveryKind, OutboundMessage } from "../ports/channel.js";
import { DELIVERY_INTENT, DELIVERY_RECEIPT } from "../ports/store.js";
import {
  type ChannelSendResult,
  editThroughChannel,
  type SendFailure,
  sendThroughChannel,
} from "./channel-send.js";
import { claimedSend } from "./claimed-send.js";
import type { ActorDeps } from "./deps.js";
import { untilStored } from "./store-retry.js";

export interface SendOptions {
  /** Stable for this logical delivery across retries and restarts (never a run id). */
  deliveryId: string;
  runId?: string | undefined;
  /** The channel of the turn the text belongs to, when the gateway has it. */
  via?: string | undefined;
  /** The platform id the text answers and its thread (from the user record), for threading. */
  replyTo?: string | undefined;
  thread?: string | undefined;
  /** Parts of a split text already delivered (part number → messageId): they are not sent again. */
  parts?: Readonly<Record<string, string>> | undefined;
  /** A preview (its messageId) the text replaces by an edit, instead of a new message. */
  editOf?: string | undefined;
  /** Called as each part of a split text is delivered (to write its receipt). */
  onPart?: ((deliveryId: string, messageId: string) => Promise<void>) | undefined;
}

/** What a send came to: the messageId of a committed receipt, or why there is none. */
export interface SendResult extends ChannelSendResult {
  /** For a split text: the parts delivered so far (part number → messageId). */
  parts?: Record<string, string>;
}

/**
 * Sends through the session's channel (or `via`); the messageId of a committed receipt, else undefined.
 * Nothing is written: a caller that needs the send to survive a crash uses `sendDurably`.
 */
export async function send(
  deps: ActorDeps,
  session: string,
  text: string,
  kind: DeliveryKind,
  options: SendOptions,
): Promise<string | undefined> {
  return (await sendWithOutcome(deps, session, text, kind, options)).messageId;
}

/**
 * As {@link send}, with why a send failed. A text longer than the channel's `maxLength` goes out in
 * parts, each under `<deliveryId>#<n>`; the first part's messageId stands for the whole.
 */
export async function sendWithOutcome(
  deps: ActorDeps,
  session: string,
  text: string,
  kind: DeliveryKind,
  options: SendOptions,
): Promise<SendResult> {
  const { channel } = deps.channelFor(session, options.via);
  const { runId, deliveryId, replyTo, thread } = options;
  const base: OutboundMessage = {
    session,
    text,
    kind,
    deliveryId,
    ...(runId ? { runId } : {}),
    ...(replyTo ? { replyTo } : {}),
    ...(thread ? { thread } : {}),
  };
  const maxLength = channel.maxLength;
  const texts =
    typeof maxLength === "number" && maxLength > 0 && text.length > maxLength
      ? splitText(text, maxLength)
      : [text];
  const parts: Record<string, string> = { ...options.parts };
  // The preview becomes the (first part of the) answer; if it cannot be edited, a new message goes out.
  if (
    options.editOf &&
    !parts["1"] &&
    (await editThroughChannel(deps, channel, options.editOf, base, texts[0]!))
  ) {
    parts["1"] = options.editOf;
    // A split answer's first part, delivered by that edit, is durable like the others: a restart
    // before the last part must not post it again.
    if (texts.length > 1) await options.onPart?.(`${deliveryId}#1`, options.editOf);
  }
  if (texts.length === 1)
    return parts["1"] ? { messageId: parts["1"] } : sendThroughChannel(deps, channel, base);
  let failure: SendFailure | undefined;
  for (const [index, part] of texts.entries()) {
    const number = String(index + 1);
    if (parts[number]) continue;
    const partId = `${deliveryId}#${number}`;
    const result = await sendThroughChannel(deps, channel, {
      ...base,
      text: part,
      deliveryId: partId,
      part: { index: index + 1, count: texts.length },
    });
    if (!result.messageId) {
      failure = result.failure ?? "not-delivered";
      // A part the platform may already have is not sent again, but the parts after it are certainly
      // not there: they still go out, so the user misses at most that part (and is told).
      if (failure === "unknown") continue;
      break;
    }
    parts[number] = result.messageId;
    await options.onPart?.(partId, result.messageId);
  }
  if (failure) return { failure, parts };
  return { messageId: parts["1"] as string, parts };
}

export interface DurableSend {
  deliveryId: string;
  messageId: string | undefined;
  failure?: SendFailure | undefined;
  /** For a split text: the parts delivered (part number → messageId). */
  parts?: Record<string, string> | undefined;
}

/**
 * A send that survives a crash exactly once: a `tiller.delivery-intent` record is durable before the
 * channel is called, and (unless `receipt: false`, when the caller writes its own, such as a final's
 * assistant record) a `tiller.delivery-receipt` after it. Without `deliveryId` the intent's record id
 * names the delivery (`<kind>:<record id>`). If the intent cannot be written the text is still sent,
 * under `fallbackId`: the user is not left waiting because the disk failed. While the store cannot be
 * reached, the intent (and the receipt) are held and tried again until they land (`untilStored`). A
 * reply or recovery whose turn left the process (`signal`: its session was lost to another process)
 * while its intent waited is not sent: whoever holds the session now resumes it from the store and
 * answers it once. A notice is sent anyway (its deliveryId is stable, so a channel that deduplicates
 * shows it once): a user is never left silent.
 */
export async function sendDurably(
  deps: ActorDeps,
  session: string,
  text: string,
  kind: DeliveryKind,
  options: Partial<SendOptions> & {
    fallbackId: string;
    final?: boolean;
    receipt?: boolean;
    /** Ends the wait for an unreachable store (the turn left this process). */
    signal?: AbortSignal;
  },
): Promise<DurableSend> {
  let deliveryId = options.deliveryId ?? options.fallbackId;
  let durable = true;
  const { signal } = options;
  try {
    const [intent] = await untilStored(
      deps,
      { session, op: "delivery-intent" },
      () =>
        deps.writer.append(session, [
          {
            role: "custom",
            customType: DELIVERY_INTENT,
            display: false,
            details: {
              ...(options.deliveryId ? { deliveryId: options.deliveryId } : {}),
              kind,
              text,
              ...(options.runId ? { runId: options.runId } : {}),
              ...(options.via ? { channel: options.via } : {}),
              ...(options.final ? { final: true } : {}),
              ...(options.replyTo ? { replyTo: options.replyTo } : {}),
              ...(options.thread ? { thread: options.thread } : {}),
            },
          },
        ]),
      signal,
    );
    if (!options.deliveryId && intent) deliveryId = `${kind}:${intent.id}`;
  } catch (error) {
    durable = false;
    deps.logger.error({ session, deliveryId, error: errorMessage(error) }, "delivery.intentFailed");
    deps.emit("delivery.intentFailed", {
      session,
      runId: options.runId,
      kind,
      deliveryId,
      error: errorMessage(error),
    });
    // The turn left this process while its intent waited for the store (its session was lost to
    // another process, which resumes it from the store): a reply sent now would be answered twice.
    if (signal?.aborted && kind !== "notice") return { deliveryId, messageId: undefined };
  }
  // Under this process's claim of the delivery (in a cluster): never while another process sends it.
  const result = await claimedSend(
    deps,
    { session, deliveryId, kind, runId: options.runId, via: options.via, signal },
    () =>
      sendWithOutcome(deps, session, text, kind, {
        ...options,
        deliveryId,
        // Each part's receipt is durable as it lands: a restart sends only the parts that never did.
        ...(durable
          ? {
              onPart: (partId, messageId) =>
                writeReceipt(deps, session, partId, messageId, undefined, signal),
            }
          : {}),
      }),
  );
  const { messageId, failure, parts } = result;
  if (durable && options.receipt !== false)
    await writeReceipt(deps, session, deliveryId, messageId, failure, signal);
  return { deliveryId, messageId, ...(failure ? { failure } : {}), ...(parts ? { parts } : {}) };
}

/**
 * The receipt of an intent, held and retried while the store cannot be reached; a failed write is
 * logged (whoever resumes the session then resends once under the same deliveryId, deduplicated).
 */
export async function writeReceipt(
  deps: ActorDeps,
  session: string,
  deliveryId: string,
  messageId: string | undefined,
  failure?: SendFailure,
  signal?: AbortSignal,
): Promise<void> {
  try {
    await untilStored(
      deps,
      { session, op: "delivery-receipt" },
      () =>
        deps.writer.append(session, [
          {
            role: "custom",
            customType: DELIVERY_RECEIPT,
            display: false,
            details: {
              deliveryId,
              delivered: messageId !== undefined,
              ...(messageId ? { messageId } : {}),
              ...(failure ? { outcome: failure } : {}),
            },
          },
        ]),
      signal,
    );
  } catch (error) {
    deps.logger.error({ session, deliveryId, error: errorMessage(error) }, "delivery.receiptFailed");
    deps.emit("delivery.receiptFailed", { session, deliveryId, error: errorMessage(error) });
  }
}
