import { ErrorCode } from "@slack/web-api";
import { ChannelSendError } from "../../../errors.js";

// Refusals of a connection that was never made: the request certainly did not reach Slack.
const NOT_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/**
 * A Web API failure as a channel error: a 429 (`Retry-After`) is transient, an `ok: false` answer
 * (`channel_not_found`, `not_in_channel`, `msg_too_long`, …) or another 4xx is permanent, a 5xx or a
 * request cut off mid-way may have been taken (outcome unknown), a connection never made is not
 * delivered.
 */
export function slackSendError(error: unknown, signal?: AbortSignal): ChannelSendError {
  if (error instanceof ChannelSendError) return error;
  const failure = error as {
    code?: string;
    retryAfter?: number;
    data?: { error?: string };
    statusCode?: number;
    original?: { code?: string; cause?: { code?: string } };
    message?: string;
  };
  const what = `slack: ${failure.message ?? String(error)}`;
  switch (failure.code) {
    case ErrorCode.RateLimitedError:
      return new ChannelSendError(what, { retryAfterMs: (failure.retryAfter ?? 1) * 1000, cause: error });
    case ErrorCode.PlatformError:
      return new ChannelSendError(`slack: ${failure.data?.error ?? "refused"}`, {
        permanent: true,
        cause: error,
      });
    case ErrorCode.HTTPError: {
      const status = failure.statusCode ?? 500;
      if (status >= 400 && status < 500) return new ChannelSendError(what, { permanent: true, cause: error });
      return new ChannelSendError(what, { outcome: "unknown", cause: error });
    }
    case ErrorCode.RequestError: {
      const code = failure.original?.code ?? failure.original?.cause?.code ?? "";
      if (!signal?.aborted && NOT_CONNECTED.has(code)) return new ChannelSendError(what, { cause: error });
      return new ChannelSendError(`${what} (it may have reached Slack)`, {
        outcome: "unknown",
        cause: error,
      });
    }
    default:
      return new ChannelSendError(what, { outcome: "unknown", cause: error });
  }
}
