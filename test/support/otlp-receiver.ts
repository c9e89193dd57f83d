import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

// An OTLP/HTTP trace receiver on 127.0.0.1 (ephemeral port), as a collector answers: POST /v1/traces
// (or any path) with an ExportTraceServiceRequest, in JSON (`application/json`) or protobuf
// (`application/x-protobuf`), answered 200 with an empty ExportTraceServiceResponse.

export interface ReceivedExport {
  path: string;
  headers: IncomingHttpHeaders;
  contentType: string;
  body: Buffer;
}

/** A span as the receiver reads it, from either encoding. */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  events: string[];
  service: string;
}

export async function startOtlpReceiver() {
  const exports: ReceivedExport[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const contentType = String(req.headers["content-type"] ?? "");
      exports.push({ path: req.url ?? "", headers: req.headers, contentType, body: Buffer.concat(chunks) });
      if (contentType.includes("json")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      } else {
        res.writeHead(200, { "content-type": "application/x-protobuf" });
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exports,
    /** Every span received so far, from JSON exports. */
    jsonSpans(): ReceivedSpan[] {
      return exports
        .filter((e) => e.contentType.includes("json"))
        .flatMap((e) => spansOfJson(JSON.parse(e.body.toString())));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: OTLP/JSON as the wire carries it
type Json = any;

/** OTLP/JSON `AnyValue` to a plain value. */
function value(any: Json): unknown {
  if (any === undefined || any === null) return undefined;
  if ("stringValue" in any) return any.stringValue;
  if ("boolValue" in any) return any.boolValue;
  if ("intValue" in any) return Number(any.intValue);
  if ("doubleValue" in any) return any.doubleValue;
  if ("arrayValue" in any) return (any.arrayValue.values ?? []).map(value);
  return undefined;
}

function attributes(list: Json[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv: Json) => [kv.key, value(kv.value)]));
}

function spansOfJson(request: Json): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans: Json) => {
    const service = String(attributes(resourceSpans.resource?.attributes)["service.name"] ?? "");
    return (resourceSpans.scopeSpans ?? []).flatMap((scope: Json) =>
      (scope.spans ?? []).map(
        (span: Json): ReceivedSpan => ({
          name: span.name,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? "",
          kind: span.kind,
          attributes: attributes(span.attributes),
          links: (span.links ?? []).map((link: Json) => ({ traceId: link.traceId, spanId: link.spanId })),
          events: (span.events ?? []).map((event: Json) => event.name),
          service,
        }),
      ),
    );
  });
}
