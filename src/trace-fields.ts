import { context, ProxyTracerProvider, type SpanContext, trace } from "@opentelemetry/api";

/** The no-op provider the API hands out while no SDK is registered. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** True once an SDK is registered globally: spans go somewhere. One comparison, no allocation. */
export function isTracingOn(): boolean {
  const global = trace.getTracerProvider();
  return !(global instanceof ProxyTracerProvider) || global.getDelegate() !== NOOP_PROVIDER;
}

/**
 * `trace_id` and `span_id` for log lines: the active span's, else (a line about a turn, with its
 * `runId`) the turn span's, so the gateway's own lines join the turn's trace in a log search.
 */

// The turns being traced now, by run id (unique across processes): the turn tracer fills it.
const runSpans = new Map<string, SpanContext>();

/** A traced turn began: lines about it carry its span. */
export function rememberRunSpan(runId: string, spanContext: SpanContext): void {
  runSpans.set(runId, spanContext);
}

/** The traced turn ended. */
export function forgetRunSpan(runId: string): void {
  runSpans.delete(runId);
}

/**
 * A pino `mixin`: the fields a log line gets from its trace (none outside one).
 *
 * @example
 * ```ts
 * const logger = pino({ mixin: traceFields });
 * ```
 */
export function traceFields(fields: object): { trace_id?: string; span_id?: string; trace_flags?: string } {
  const active = trace.getSpanContext(context.active());
  const spanContext =
    active ??
    (runSpans.size > 0 && typeof (fields as { runId?: unknown }).runId === "string"
      ? runSpans.get((fields as { runId: string }).runId)
      : undefined);
  // A fresh object: pino merges the line's own fields into it.
  if (!spanContext) return {};
  return {
    trace_id: spanContext.traceId,
    span_id: spanContext.spanId,
    trace_flags: `0${spanContext.traceFlags.toString(16)}`,
  };
}
