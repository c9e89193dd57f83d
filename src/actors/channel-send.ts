import { errorMessage } from "../errors.js";
import { type Channel, type DeliveryReceipt, isCommitted, type OutboundMessage } from "../ports/channel.js";
import { DeadlineError, sleep, withDeadline } from "../ports/clock.js";
import type { ActorDeps } from "./deps.js";

/**
 * One logical send through a channel, with the edge's exactly-once rules (docs/guarantees.md):
 * - at `delivery.sendTimeoutMs` the call's signal aborts and Tiller waits for it to settle: a receipt
 *   that comes late is a delivery, never followed by a resend;
 * - a failure known as "not delivered" is handed back (the caller may resend later, same deliveryId);
 *   one with `retryAfterMs` is tried once more after that long, on the clock;
 * - `permanent` is never retried;
 * - an `unknown` outcome is resent only when the channel's `reconcile` says it was not delivered.
 */
export type SendFailure = "not-delivered" | "permanent" | "unknown";

export interface ChannelSendResult {
  messageId?: string;
  /** Why there is no messageId. */
  failure?: SendFailure;
}

type Attempt =
  | { receipt: DeliveryReceipt }
  | { failure: SendFailure; reason: string; retryAfterMs?: number; late?: boolean };

/** A retry the platform asks for later than this is not waited for: the send counts as not delivered. */
const MAX_RETRY_AFTER_MS = 60_000;

export async function sendThroughChannel(
  deps: ActorDeps,
  channel: Channel,
  message: OutboundMessage,
): Promise<ChannelSendResult> {
  let attempt = await attemptSend(deps, channel, message);
  if ("failure" in attempt && attempt.failure === "not-delivered" && attempt.retryAfterMs !== undefined) {
    const afterMs = attempt.retryAfterMs;
    if (afterMs <= MAX_RETRY_AFTER_MS) {
      failed(deps, message, attempt);
      deps.emit("delivery.retried", {
        session: message.session,
        runId: message.runId,
        kind: message.kind,
        deliveryId: message.deliveryId,
        afterMs,
      });
      await sleep(deps.clock, afterMs);
      attempt = await attemptSend(deps, channel, message);
    }
  }
  if ("failure" in attempt && attempt.failure === "unknown" && message.deliveryId && channel.reconcile) {
    failed(deps, message, attempt);
    const answer = await reconcile(deps, channel, message.deliveryId);
    deps.emit("delivery.reconciled", {
      session: message.session,
      runId: message.runId,
      kind: message.kind,
      deliveryId: message.deliveryId,
      answer: answer === undefined ? "unknown" : answer.delivered ? "delivered" : "not-delivered",
    });
    if (answer?.delivered) return { messageId: answer.messageId };
    // Known not delivered: the one resend, under the same deliveryId.
    if (answer) attempt = await attemptSend(deps, channel, message);
  }
  if ("receipt" in attempt) {
    if (isCommitted(attempt.receipt)) return { messageId: attempt.receipt.messageId };
    failed(deps, message, { failure: "not-delivered", reason: "receipt without messageId" });
    return { failure: "not-delivered" };
  }
  failed(deps, message, attempt);
  return { failure: attempt.failure };
}

/**
 * Replaces the text of message `messageId` (a streaming preview) with `text`, under the same timeout
 * and settle rules as a send; whether the platform took it. A channel without `edit` never does.
 */
export async function editThroughChannel(
  deps: ActorDeps,
  channel: Channel,
  messageId: string,
  message: OutboundMessage,
  text: string,
): Promise<boolean> {
  if (!channel.edit) return false;
  const timeoutMs = deps.config.delivery.sendTimeoutMs;
  const controller = new AbortController();
  const timer = deps.clock.setTimeout(() => controller.abort(new DeadlineError(timeoutMs)), timeoutMs);
  try {
    await withDeadline(
      deps.clock,
      Promise.resolve().then(() =>
        channel.edit?.(
          {
            session: message.session,
            messageId,
            ...(message.deliveryId ? { deliveryId: message.deliveryId } : {}),
            ...(message.thread ? { thread: message.thread } : {}),
          },
          text,
          { signal: controller.signal },
        ),
      ),
      timeoutMs + deps.config.delivery.sendAbortGraceMs,
    );
    return true;
  } catch (error) {
    failed(deps, message, {
      ...classify(error, controller.signal.aborted, timeoutMs),
      reason: `edit: ${errorMessage(error)}`,
    });
    return false;
  } finally {
    deps.clock.clearTimeout(timer);
  }
}

/** One call of `channel.send`, settled: its receipt or what its failure means. */
async function attemptSend(deps: ActorDeps, channel: Channel, message: OutboundMessage): Promise<Attempt> {
  const timeoutMs = deps.config.delivery.sendTimeoutMs;
  const controller = new AbortController();
  let timedOut = false;
  const timer = deps.clock.setTimeout(() => {
    timedOut = true;
    controller.abort(new DeadlineError(timeoutMs));
  }, timeoutMs);
  try {
    // A channel that ignores its signal is waited for until the grace is over too; its outcome is
    // then unknown (it may still post), so it is not resent blindly.
    const receipt = await withDeadline(
      deps.clock,
      Promise.resolve().then(() => channel.send(message, { signal: controller.signal })),
      timeoutMs + deps.config.delivery.sendAbortGraceMs,
    );
    if (timedOut && isCommitted(receipt))
      deps.emit("delivery.late", {
        session: message.session,
        runId: message.runId,
        kind: message.kind,
        deliveryId: message.deliveryId,
        timeoutMs,
      });
    return { receipt };
  } catch (error) {
    return classify(error, timedOut, timeoutMs);
  } finally {
    deps.clock.clearTimeout(timer);
  }
}

/** What a channel's rejection means (read by shape, so a channel need not import the error class). */
export function classify(
  error: unknown,
  aborted: boolean,
  timeoutMs: number,
): Extract<Attempt, { failure: SendFailure }> {
  const fields = (typeof error === "object" && error !== null ? error : {}) as {
    permanent?: unknown;
    outcome?: unknown;
    retryAfterMs?: unknown;
  };
  const reason =
    error instanceof DeadlineError
      ? `the channel did not settle within ${error.ms} ms (it was aborted after ${timeoutMs} ms)`
      : errorMessage(error);
  if (fields.permanent === true) return { failure: "permanent", reason };
  if (fields.outcome === "unknown") return { failure: "unknown", reason };
  // Aborted by the timeout without saying what became of the request: it may have been written.
  if (aborted && fields.outcome !== "not-delivered") return { failure: "unknown", reason, late: true };
  const retryAfterMs = fields.retryAfterMs;
  if (typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs) && retryAfterMs >= 0)
    return { failure: "not-delivered", reason, retryAfterMs };
  return { failure: "not-delivered", reason };
}

async function reconcile(deps: ActorDeps, channel: Channel, deliveryId: string) {
  try {
    const answer = await withDeadline(
      deps.clock,
      Promise.resolve().then(() => channel.reconcile?.(deliveryId)),
      deps.config.delivery.sendTimeoutMs,
    );
    if (answer?.delivered === true && typeof answer.messageId === "string" && answer.messageId)
      return { delivered: true as const, messageId: answer.messageId };
    if (answer?.delivered === false) return { delivered: false as const };
  } catch (error) {
    deps.logger.warn({ deliveryId, error: errorMessage(error) }, "delivery.reconcileFailed");
  }
  return undefined;
}

function failed(
  deps: ActorDeps,
  message: OutboundMessage,
  attempt: { failure: SendFailure; reason: string },
): void {
  deps.emit("delivery.failed", {
    session: message.session,
    runId: message.runId,
    kind: message.kind,
    deliveryId: message.deliveryId,
    reason: attempt.reason,
    outcome: attempt.failure,
  });
}
