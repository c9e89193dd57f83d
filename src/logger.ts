import { pino } from "pino";
import { traceFields } from "./trace-fields.js";

/** The subset of pino's logger Tiller uses; pass any pino logger (or a compatible one). */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  isLevelEnabled?(level: string): boolean;
}

/**
 * The default logger: pino at `warn` (or `TILLER_LOG_LEVEL`), to stderr so stdout stays clean for
 * `tiller run --json`. A line written inside a span (or about a traced turn) carries `trace_id` and
 * `span_id`.
 *
 * @example
 * ```ts
 * const logger = createLogger("debug");
 * logger.debug({ lane: "main" }, "lane.started");
 * ```
 */
export function createLogger(level = process.env.TILLER_LOG_LEVEL ?? "warn"): Logger {
  return pino({ level, base: null, mixin: traceFields }, pino.destination(2));
}

/** A logger that writes nothing: the default when the gateway is given none. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  isLevelEnabled: () => false,
};

/**
 * A logger whose calls never throw: a faulty logger (a full pipe, a buggy transport) must not break
 * the turn it was asked to record.
 *
 * @example
 * ```ts
 * const logger = neverThrowing(createLogger());
 * ```
 */
export function neverThrowing(logger: Logger): Logger {
  const guard =
    (level: "debug" | "info" | "warn" | "error") =>
    (obj: object, msg?: string): void => {
      try {
        logger[level](obj, msg);
      } catch {
        // Dropped: the log line is lost, the work goes on.
      }
    };
  return {
    debug: guard("debug"),
    info: guard("info"),
    warn: guard("warn"),
    error: guard("error"),
    isLevelEnabled(level: string): boolean {
      try {
        return logger.isLevelEnabled?.(level) ?? false;
      } catch {
        return false;
      }
    },
  };
}
