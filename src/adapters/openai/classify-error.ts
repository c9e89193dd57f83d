import { APIConnectionTimeoutError, APIError } from "openai";
import { errorMessage, ModelError } from "../../errors.js";

export interface Classified {
  error: ModelError;
  /** How long the server asked us to wait (`Retry-After`, `retry-after-ms`), in ms. */
  retryAfterMs?: number;
}

/**
 * Maps what a chat-completions call failed with to a typed {@link ModelError}:
 * 429 `MODEL_RATE_LIMITED` and 408 / 409 / 5xx / a refused connection `MODEL_UNAVAILABLE` (both
 * retryable), 401 / 403 `MODEL_AUTH` and other 4xx `MODEL_BAD_REQUEST` (not), a chunk that is not JSON
 * `MODEL_REPLY_INVALID`. Once the reply has begun streaming (`started`), a break is
 * `MODEL_STREAM_INTERRUPTED`: it is not retried, since the user may already have seen part of it.
 *
 * @example
 * ```ts
 * classifyError(new RateLimitError(429, {}, "slow down", headers), { started: false }).error.code; // "MODEL_RATE_LIMITED"
 * ```
 */
export function classifyError(error: unknown, progress: { started: boolean; chars: number }): Classified {
  if (error instanceof ModelError) return { error };
  if (error instanceof SyntaxError)
    return {
      error: new ModelError(
        "MODEL_REPLY_INVALID",
        `the model server sent a chunk that is not JSON: ${error.message}`,
        {
          cause: error,
        },
      ),
    };
  if (progress.started) return { error: interrupted(error, progress.chars) };
  if (error instanceof APIConnectionTimeoutError)
    return {
      error: new ModelError("MODEL_TIMEOUT", "the model server did not answer in time", {
        retryable: true,
        cause: error,
      }),
    };
  if (error instanceof APIError && typeof error.status === "number") return fromStatus(error, error.status);
  // A refused or reset connection, an error event before any chunk: the server may be back soon.
  return {
    error: new ModelError("MODEL_UNAVAILABLE", `the model server could not be reached: ${reason(error)}`, {
      retryable: true,
      cause: error,
    }),
  };
}

/** A reply that broke off after it began streaming. */
export function interrupted(cause: unknown, chars: number): ModelError {
  return new ModelError(
    "MODEL_STREAM_INTERRUPTED",
    `the model's reply broke off after it began streaming (${chars} characters received) and is not ` +
      `regenerated: ${reason(cause)}`,
    { cause },
  );
}

function fromStatus(error: APIError, status: number): Classified {
  const detail = `the model server answered ${status}: ${serverMessage(error)}`;
  const options = { cause: error, status };
  if (status === 401 || status === 403)
    return { error: new ModelError("MODEL_AUTH", `${detail} (check the API key)`, options) };
  if (status === 429) {
    // An exhausted quota is a 429 too, but waiting does not refill it.
    const quota = error.code === "insufficient_quota";
    const retryAfterMs = retryAfter(error.headers);
    return {
      error: new ModelError("MODEL_RATE_LIMITED", detail, { ...options, retryable: !quota }),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  }
  if (status === 408 || status === 409 || status >= 500) {
    const retryAfterMs = retryAfter(error.headers);
    return {
      error: new ModelError("MODEL_UNAVAILABLE", detail, { ...options, retryable: true }),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  }
  return { error: new ModelError("MODEL_BAD_REQUEST", detail, options) };
}

/** The server's own words: the `error.message` of its JSON body, else the SDK's summary. */
function serverMessage(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  if (body && typeof body.message === "string" && body.message) return body.message;
  return error.message.replace(/^\d{3}\s*/, "") || "no details";
}

function reason(error: unknown): string {
  const cause = (error as { cause?: unknown })?.cause;
  const own = errorMessage(error);
  return cause === undefined ? own : `${own} (${errorMessage(cause)})`;
}

/** `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date. */
export function retryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get("retry-after");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/** The server fell silent: before the reply began a retryable timeout, after it an interruption. */
export function timeoutError(progress: { started: boolean; chars: number }, message: string): Classified {
  if (progress.started) return { error: interrupted(new Error(message), progress.chars) };
  return { error: new ModelError("MODEL_TIMEOUT", message, { retryable: true }) };
}

/** Whether a rejection is a failure this provider already classified. */
export function isClassified(value: unknown): value is Classified {
  return value !== null && typeof value === "object" && (value as Classified).error instanceof ModelError;
}
