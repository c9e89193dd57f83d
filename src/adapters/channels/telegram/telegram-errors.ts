import { GrammyError, HttpError } from "grammy";
import { ChannelSendError } from "../../../errors.js";

// Refusals of a connection that was never made: the request certainly did not reach Telegram.
const NOT_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/**
 * A grammY failure as a channel error: 429 is transient with Telegram's `parameters.retry_after`,
 * any other 4xx is permanent (a 400 will fail the same way again), a 5xx or a request cut off
 * mid-way (aborted, reset) may have been taken, so its outcome is unknown; a connection never made is
 * not delivered.
 */
export function telegramSendError(error: unknown, signal?: AbortSignal): ChannelSendError {
  if (error instanceof ChannelSendError) return error;
  if (error instanceof GrammyError) {
    const what = `telegram ${error.method}: ${error.error_code} ${error.description}`;
    if (error.error_code === 429) {
      const seconds = error.parameters.retry_after ?? 1;
      return new ChannelSendError(what, { retryAfterMs: seconds * 1000, cause: error });
    }
    if (error.error_code >= 400 && error.error_code < 500)
      return new ChannelSendError(what, { permanent: true, cause: error });
    return new ChannelSendError(what, { outcome: "unknown", cause: error });
  }
  if (error instanceof HttpError) {
    const code = (error.error as { code?: string; cause?: { code?: string } } | undefined)?.code;
    const causeCode = (error.error as { cause?: { code?: string } } | undefined)?.cause?.code;
    if (!signal?.aborted && (NOT_CONNECTED.has(code ?? "") || NOT_CONNECTED.has(causeCode ?? "")))
      return new ChannelSendError(`telegram: ${error.message}`, { cause: error });
    return new ChannelSendError(`telegram: ${error.message} (it may have reached Telegram)`, {
      outcome: "unknown",
      cause: error,
    });
  }
  return new ChannelSendError(`telegram: ${String(error)}`, { outcome: "unknown", cause: error });
}

/** Telegram's answer to an edit that changes nothing: the preview already shows that text. */
export function isNotModified(error: unknown): boolean {
  return error instanceof GrammyError && /message is not modified/i.test(error.description);
}
