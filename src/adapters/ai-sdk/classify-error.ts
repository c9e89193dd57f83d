import { APICallError } from "@ai-sdk/provider";
import { errorMessage, ModelError } from "../../errors.js";
import { type Classified, interrupted, retryAfter } from "../openai/classify-error.js";

/**
 * Maps what an AI SDK model call failed with to a typed {@link ModelError}, with the same codes as the
 * OpenAI-compatible provider: an `APICallError` by its status (429 `MODEL_RATE_LIMITED`, 408 / 409 /
 * 5xx / 529 `MODEL_UNAVAILABLE`, both retryable; 401 / 403 `MODEL_AUTH`; other 4xx `MODEL_BAD_REQUEST`),
 * an error event in the stream by its type (`rate_limit_error`, `overloaded_error`, `api_error`), a
 * failure without a status (the connection) `MODEL_UNAVAILABLE`. Once the reply has begun, any break is
 * `MODEL_STREAM_INTERRUPTED`.
 *
 * @example
 * ```ts
 * classifyAISDKError(new APICallError({ message: "slow down", statusCode: 429, url, requestBodyValues: {} }), { started: false, chars: 0 }).error.code; // "MODEL_RATE_LIMITED"
 * ```
 */
export function classifyAISDKError(
  error: unknown,
  progress: { started: boolean; chars: number },
): Classified {
  if (error instanceof ModelError) return { error };
  if (progress.started) return { error: interrupted(error, progress.chars) };
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const waitMs = retryAfter(error.responseHeaders ? new Headers(error.responseHeaders) : undefined);
    if (typeof status === "number") return fromStatus(error, status, waitMs);
    return unavailable(`the model server could not be reached: ${reason(error)}`, error, waitMs);
  }
  const streamed = streamedType(error);
  if (streamed === "rate_limit_error")
    return {
      error: new ModelError("MODEL_RATE_LIMITED", `the model server is rate limiting: ${reason(error)}`, {
        retryable: true,
        cause: error,
      }),
    };
  if (streamed === "overloaded_error" || streamed === "api_error")
    return unavailable(`the model server is unavailable: ${reason(error)}`, error);
  const name = (error as { name?: unknown })?.name;
  if (name === "AI_LoadAPIKeyError")
    return {
      error: new ModelError("MODEL_AUTH", `no API key for the model server: ${reason(error)}`, {
        cause: error,
      }),
    };
  if (
    name === "AI_JSONParseError" ||
    name === "AI_TypeValidationError" ||
    name === "AI_InvalidResponseDataError"
  )
    return {
      error: new ModelError(
        "MODEL_REPLY_INVALID",
        `the model server sent a reply that could not be read: ${reason(error)}`,
        { cause: error },
      ),
    };
  return unavailable(`the model call failed: ${reason(error)}`, error);
}

function fromStatus(error: APICallError, status: number, retryAfterMs: number | undefined): Classified {
  const detail = `the model server answered ${status}: ${error.message || "no details"}`;
  const options = { cause: error, status };
  const wait = retryAfterMs !== undefined ? { retryAfterMs } : {};
  if (status === 401 || status === 403)
    return { error: new ModelError("MODEL_AUTH", `${detail} (check the API key)`, options) };
  if (status === 429)
    return { error: new ModelError("MODEL_RATE_LIMITED", detail, { ...options, retryable: true }), ...wait };
  if (status === 408 || status === 409 || status >= 500)
    return { error: new ModelError("MODEL_UNAVAILABLE", detail, { ...options, retryable: true }), ...wait };
  return { error: new ModelError("MODEL_BAD_REQUEST", detail, options) };
}

function unavailable(message: string, cause: unknown, retryAfterMs?: number): Classified {
  return {
    error: new ModelError("MODEL_UNAVAILABLE", message, { retryable: true, cause }),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** The `type` of an error object a provider put in the stream (Anthropic's `{ type, message }`). */
function streamedType(error: unknown): string | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === "string" ? type : undefined;
}

function reason(error: unknown): string {
  if (error && typeof error === "object" && !(error instanceof Error)) {
    const message = (error as { message?: unknown }).message;
    if (typeof message === "string") return message;
    return JSON.stringify(error);
  }
  const cause = (error as { cause?: unknown })?.cause;
  const own = errorMessage(error);
  return cause === undefined ? own : `${own} (${errorMessage(cause)})`;
}
