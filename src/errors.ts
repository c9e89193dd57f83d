/**
 * Every error Tiller throws or rejects with is a {@link TillerError}: a stable `code` to branch on, a
 * `retryable` flag that says whether the same call may succeed later, and the underlying `cause`.
 *
 * @example
 * ```ts
 * import { LaneClearedError, TillerError } from "tiller-gateway";
 * try { await lanes.run({ session: "A" }, work); }
 * catch (error) { if (error instanceof TillerError && error.code === "LANE_CLEARED") retryLater(); }
 * ```
 */
export type TillerErrorCode =
  | "LANE_CLEARED"
  | "LANE_TIMEOUT"
  | "GATEWAY_DRAINING"
  | "STALE_WRITER"
  | "CONFIG_INVALID"
  | "STORE_LOCKED"
  | "STORE_CORRUPT"
  | "MESSAGE_REJECTED"
  | "SESSION_KEY_INVALID"
  | "MODEL_REPLY_INVALID"
  | "MODEL_FAILED"
  | "MODEL_TIMEOUT"
  | "MODEL_CALL_LIMIT"
  | "STORE_FAILED"
  | "RUN_FAILED"
  | "DETECTOR_FAILED"
  | "DETECTOR_TIMEOUT"
  | "DETECTOR_VERDICT_INVALID"
  | "MODEL_RATE_LIMITED"
  | "MODEL_UNAVAILABLE"
  | "MODEL_AUTH"
  | "MODEL_BAD_REQUEST"
  | "MODEL_STREAM_INTERRUPTED"
  | "LEASE_LOST"
  | "SUBAGENT_FAILED"
  | "CHANNEL_SEND_FAILED";

// One entry per code: TypeScript refuses this object when a code of the union is missing from it.
const CODES: Record<TillerErrorCode, true> = {
  LANE_CLEARED: true,
  LANE_TIMEOUT: true,
  GATEWAY_DRAINING: true,
  STALE_WRITER: true,
  CONFIG_INVALID: true,
  STORE_LOCKED: true,
  STORE_CORRUPT: true,
  MESSAGE_REJECTED: true,
  SESSION_KEY_INVALID: true,
  MODEL_REPLY_INVALID: true,
  MODEL_FAILED: true,
  MODEL_TIMEOUT: true,
  MODEL_CALL_LIMIT: true,
  STORE_FAILED: true,
  RUN_FAILED: true,
  MODEL_RATE_LIMITED: true,
  MODEL_UNAVAILABLE: true,
  MODEL_AUTH: true,
  MODEL_BAD_REQUEST: true,
  MODEL_STREAM_INTERRUPTED: true,
  DETECTOR_FAILED: true,
  DETECTOR_TIMEOUT: true,
  DETECTOR_VERDICT_INVALID: true,
  LEASE_LOST: true,
  SUBAGENT_FAILED: true,
  CHANNEL_SEND_FAILED: true,
};

/** True for a value that is one of Tiller's error codes (an adapter's own codes are not). */
export function isTillerErrorCode(code: unknown): code is TillerErrorCode {
  return typeof code === "string" && Object.hasOwn(CODES, code);
}

/** Every {@link TillerErrorCode}. */
export const TILLER_ERROR_CODES = Object.keys(CODES).filter(isTillerErrorCode);

export class TillerError extends Error {
  readonly code: TillerErrorCode;
  readonly retryable: boolean;

  constructor(
    code: TillerErrorCode,
    message: string,
    options: { retryable?: boolean; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }

  /** A JSON-safe summary, the form errors take inside machine context and events. */
  toJSON(): { code: TillerErrorCode; message: string; retryable: boolean } {
    return { code: this.code, message: this.message, retryable: this.retryable };
  }
}

/** A waiting entry was removed by `clear(lane)`; the work never started. Safe to submit again. */
export class LaneClearedError extends TillerError {
  readonly lane: string;
  constructor(lane: string) {
    super("LANE_CLEARED", `lane "${lane}" was cleared before this task started`, { retryable: true });
    this.lane = lane;
  }
}

/** A task ran past its `timeoutMs`; its slot was freed and any late result is dropped. */
export class LaneTimeoutError extends TillerError {
  readonly lane: string;
  readonly timeoutMs: number;
  constructor(lane: string, timeoutMs: number) {
    super("LANE_TIMEOUT", `task in lane "${lane}" timed out after ${timeoutMs} ms`, { retryable: true });
    this.lane = lane;
    this.timeoutMs = timeoutMs;
  }
}

/** New work was offered while the scheduler or gateway drains. */
export class GatewayDrainingError extends TillerError {
  constructor(what = "gateway") {
    super("GATEWAY_DRAINING", `${what} is draining: no new work is admitted until resume()`, {
      retryable: true,
    });
  }
}

/** An append named a session id or lifecycle revision that is no longer current; nothing was written. */
export class StaleWriterError extends TillerError {
  constructor(session: string, expected: string, actual: string) {
    super(
      "STALE_WRITER",
      `stale writer for session "${session}": expected ${expected}, the transcript is at ${actual}`,
    );
  }
}

/** Configuration or an argument failed validation; the message names the field, expectation and value. */
export class ConfigError extends TillerError {
  readonly field: string;
  /** Every problem found, each naming its field (one entry when there was one problem). */
  problems: Array<{ field: string; message: string }>;
  constructor(field: string, expected: string, received: unknown, options: { cause?: unknown } = {}) {
    super("CONFIG_INVALID", `${field}: expected ${expected}, received ${describe(received)}`, options);
    this.field = field;
    this.problems = [{ field, message: this.message }];
  }
}

/** An inbound message could not be accepted (too large, malformed, hostile session key). */
export class MessageRejectedError extends TillerError {
  readonly field: string;
  constructor(field: string, reason: string, code: TillerErrorCode = "MESSAGE_REJECTED") {
    super(code, `${field}: ${reason}`);
    this.field = field;
  }
}

/** A store directory is already held by another process. */
export class StoreLockedError extends TillerError {
  constructor(dir: string, holder: string) {
    super("STORE_LOCKED", `store directory "${dir}" is locked by ${holder}`, { retryable: true });
  }
}

/**
 * A write carried a fencing token that no longer holds the session's lease (it expired, or another
 * process took the session over): nothing was written. The run that made it must stop.
 */
export class LeaseLostError extends TillerError {
  readonly session: string;
  readonly fence: number;
  constructor(session: string, fence: number) {
    super(
      "LEASE_LOST",
      `session "${session}": fencing token ${fence} no longer holds the lease; nothing was written`,
    );
    this.session = session;
    this.fence = fence;
  }
}

/**
 * The gateway's stale-reply detector (`staleReplyRecheck.detect`) threw, did not answer within
 * `detectTimeoutMs`, or returned something that is not a verdict; the built-in signals decided instead.
 */
export class DetectorError extends TillerError {
  constructor(
    code: "DETECTOR_FAILED" | "DETECTOR_TIMEOUT" | "DETECTOR_VERDICT_INVALID",
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(code, `staleReplyRecheck.detect: ${message}`, { retryable: true, ...options });
  }
}

/** The codes a model provider fails with (see docs/models.md for what each one means). */
export type ModelErrorCode =
  | "MODEL_RATE_LIMITED"
  | "MODEL_UNAVAILABLE"
  | "MODEL_AUTH"
  | "MODEL_BAD_REQUEST"
  | "MODEL_TIMEOUT"
  | "MODEL_REPLY_INVALID"
  | "MODEL_STREAM_INTERRUPTED";

/**
 * A model call failed: rate limited or unavailable (retryable), refused credentials or a request the
 * server will not take (not retryable), or a reply that broke off after it began streaming (not
 * retried, so a half-streamed reply is never silently regenerated). `status` is the HTTP status, when
 * there was one.
 *
 * @example
 * ```ts
 * gateway.subscribe((event) => {
 *   if (event.type === "turn.ended" && event.error?.code === "MODEL_AUTH") alertOperator(event);
 * });
 * ```
 */
export class ModelError extends TillerError {
  readonly status: number | undefined;
  constructor(
    code: ModelErrorCode,
    message: string,
    options: { retryable?: boolean; cause?: unknown; status?: number } = {},
  ) {
    super(code, message, options);
    this.status = options.status;
  }
}

/** Renders a received value for an error message: short, single-line, never the whole object. */
export function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (typeof value === "string")
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return String(value);
  if (typeof value === "function") return "a function";
  if (Array.isArray(value)) return `an array of ${value.length}`;
  try {
    return `${typeof value} ${JSON.stringify(value)?.slice(0, 60) ?? ""}`;
  } catch {
    return `${typeof value} (not serializable)`;
  }
}

/**
 * The message of anything thrown: an Error's, an object's own `message` (adapters reject with plain
 * objects such as `{ code: 429, message: "too many requests" }`), a string, or a description.
 *
 * @example
 * ```ts
 * errorMessage({ code: 429, message: "too many requests" }); // "too many requests"
 * ```
 */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "string") return error;
  if (
    error !== null &&
    typeof error === "object" &&
    typeof (error as { message?: unknown }).message === "string"
  )
    return (error as { message: string }).message;
  return describe(error);
}

/**
 * What a channel throws from `send` (or `edit`) to say what became of the message, so Tiller decides
 * the right thing (docs/channels.md):
 * - `outcome: "not-delivered"` (the default): the platform certainly does not have it; Tiller may
 *   resend it under the same deliveryId. With `retryAfterMs` the failure is transient (a 429): the
 *   send is tried once more after that long.
 * - `permanent: true`: the platform refused it for good (a 400, a blocked bot); never retried, the
 *   user gets the could-not-deliver notice where one can still reach them.
 * - `outcome: "unknown"`: the request may have reached the platform (aborted after it was written, a
 *   connection cut before the answer). Tiller resends only if the channel's `reconcile(deliveryId)`
 *   says it was not delivered; without `reconcile` it never resends.
 *
 * Any other error a channel throws counts as `not-delivered`.
 *
 * @example
 * ```ts
 * throw new ChannelSendError("telegram: 429 Too Many Requests", { retryAfterMs: 3000 });
 * throw new ChannelSendError("telegram: 400 chat not found", { permanent: true });
 * throw new ChannelSendError("telegram: aborted mid-request", { outcome: "unknown" });
 * ```
 */
export class ChannelSendError extends TillerError {
  /** Whether the platform may have the message. @default "not-delivered" */
  readonly outcome: ChannelSendOutcome;
  /** Transient: the platform asks to wait this long before one more try. */
  readonly retryAfterMs: number | undefined;
  /** Refused for good: never retried. @default false */
  readonly permanent: boolean;
  constructor(
    message: string,
    options: {
      outcome?: ChannelSendOutcome;
      retryAfterMs?: number;
      permanent?: boolean;
      cause?: unknown;
    } = {},
  ) {
    const permanent = options.permanent === true;
    super("CHANNEL_SEND_FAILED", message, { retryable: !permanent, cause: options.cause });
    this.outcome = options.outcome ?? "not-delivered";
    this.retryAfterMs = options.retryAfterMs;
    this.permanent = permanent;
  }
}

/** Whether a failed send may have reached the platform. */
export type ChannelSendOutcome = "not-delivered" | "unknown";
