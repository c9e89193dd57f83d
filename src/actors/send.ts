import { errorMessage } from "../errors.js";
import { type DeliveryKind, isCommitted } from "../ports/channel.js";
import { DeadlineError, withDeadline } from "../ports/clock.js";
import { DELIVERY_INTENT, DELIVERY_RECEIPT } from "../ports/store.js";
import type { ActorDeps } from "./deps.js";
import { untilStored } from "./store-retry.js";

export interface SendOptions {
  /** Stable for this logical delivery across retries and restarts (never a run id). */
  deliveryId: string;
  runId?: string | undefined;
  /** The channel of the turn the text belongs to, when the gateway has it. */
  via?: string | undefined;
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
  const { channel } = deps.channelFor(session, options.via);
  const { runId, deliveryId } = options;
  try {
    const receipt = await withDeadline(
      deps.clock,
      channel.send({ session, text, kind, deliveryId, ...(runId ? { runId } : {}) }),
      deps.config.delivery.sendTimeoutMs,
    );
    if (isCommitted(receipt)) return receipt.messageId;
    deps.emit("delivery.failed", { session, runId, kind, deliveryId, reason: "receipt without messageId" });
  } catch (error) {
    deps.emit("delivery.failed", {
      session,
      runId,
      kind,
      deliveryId,
      reason:
        error instanceof DeadlineError
          ? `the channel did not answer within ${error.ms} ms`
          : errorMessage(error),
    });
  }
  return undefined;
}

export interface DurableSend {
  deliveryId: string;
  messageId: string | undefined;
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
  const messageId = await send(deps, session, text, kind, { ...options, deliveryId });
  if (durable && options.receipt !== false) await writeReceipt(deps, session, deliveryId, messageId, signal);
  return { deliveryId, messageId };
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
            details: { deliveryId, delivered: messageId !== undefined, ...(messageId ? { messageId } : {}) },
          },
        ]),
      signal,
    );
  } catch (error) {
    deps.logger.error({ session, deliveryId, error: errorMessage(error) }, "delivery.receiptFailed");
    deps.emit("delivery.receiptFailed", { session, deliveryId, error: errorMessage(error) });
  }
}
