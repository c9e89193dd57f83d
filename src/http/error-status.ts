import {
  ConfigError,
  GatewayDrainingError,
  isStoreUnreachable,
  MessageRejectedError,
  TillerError,
  type TillerErrorCode,
} from "../errors.js";
import type { Ack } from "../gateway/inbound/compose-ack.js";
import { DRAINING_REASON } from "../policy/admission.js";
import { HttpError } from "./http-error.js";

/**
 * How the HTTP API answers each of the gateway's typed errors: one row per code that is not a plain
 * 500 (or a 503 for a retryable one). A new refusal is a new row here.
 */
const STATUS_OF: Partial<Record<TillerErrorCode, { status: number; headers?: Record<string, string> }>> = {
  MESSAGE_REJECTED: { status: 400 },
  SESSION_KEY_INVALID: { status: 400 },
  CONFIG_INVALID: { status: 400 },
  GATEWAY_DRAINING: { status: 503, headers: { "retry-after": "5" } },
};

/** The database went away (a restart, a failover, max_connections): a passing fault, said as one. */
const STORE_UNAVAILABLE = { status: 503, headers: { "retry-after": "5" } };

/** The answer for an error a handler threw: its own status for an HttpError, else by code. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (isStoreUnreachable(error))
    return new HttpError(
      STORE_UNAVAILABLE.status,
      "STORE_UNAVAILABLE",
      "the store cannot be reached; try again shortly",
      undefined,
      STORE_UNAVAILABLE.headers,
    );
  if (error instanceof TillerError) {
    const row = STATUS_OF[error.code];
    const field =
      error instanceof MessageRejectedError || error instanceof ConfigError ? error.field : undefined;
    if (row) return new HttpError(row.status, error.code, error.message, field, row.headers);
    return new HttpError(error.retryable ? 503 : 500, error.code, error.message);
  }
  return new HttpError(500, "INTERNAL", "internal error");
}

/**
 * An ack the API does not answer 200 with, as the error to answer instead, or undefined. A message
 * turned away because the gateway began to drain while it was in flight is a 503, as one that came
 * after: a client retries a 503, and would not retry a 200.
 */
export function refusalOfAck(ack: Ack): HttpError | undefined {
  if (ack.disposition === "rejected" && ack.reason === DRAINING_REASON)
    return toHttpError(new GatewayDrainingError("the server"));
  return undefined;
}
