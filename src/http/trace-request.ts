import type { IncomingMessage, ServerResponse } from "node:http";
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { isTracingOn } from "../trace-fields.js";

/**
 * Runs a request's handler inside a server span while tracing is on, continuing the caller's trace
 * (`traceparent`): the turn a posted message starts links to it. Only writes (POST) are traced; the
 * long-lived event streams and page reads would be noise.
 */
export function traceRequest(
  req: IncomingMessage,
  res: ServerResponse,
  handle: () => Promise<void>,
): Promise<void> {
  if (req.method !== "POST" || !isTracingOn()) return handle();
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const span = trace
    .getTracer("tiller")
    .startSpan(
      "POST",
      { kind: SpanKind.SERVER, attributes: { "http.request.method": "POST", "url.path": path } },
      parent,
    );
  res.once("close", () => {
    span.setAttribute("http.response.status_code", res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  return context.with(trace.setSpan(parent, span), handle);
}
