import { readFile } from "node:fs/promises";
import { errorMessage } from "../errors.js";
import { UsageError } from "./serve-setup.js";

/** The OpenTelemetry SDK `tiller serve` registered, and how to flush it on the way out. */
export interface ServeTracing {
  /** For the startup banner: where spans go. */
  description: string;
  /** Flushes the spans still buffered and stops the exporter. */
  shutdown(): Promise<void>;
}

const PROTOCOLS = ["http/protobuf", "http/json"] as const;

/**
 * Registers the OpenTelemetry Node SDK with an OTLP/HTTP exporter when the standard environment asks
 * for one (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`); undefined otherwise.
 * The SDK is imported only then, so a plain `tiller serve` loads none of it.
 *
 * Honoured: `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` (`http/protobuf` [default] or `http/json`),
 * `OTEL_SERVICE_NAME` [tiller], `OTEL_SDK_DISABLED`, and what the SDK and exporter read themselves
 * (`OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`, `..._TIMEOUT`, `OTEL_TRACES_SAMPLER(_ARG)`, `OTEL_BSP_*`,
 * `OTEL_RESOURCE_ATTRIBUTES`).
 */
export async function startServeTracing(env: NodeJS.ProcessEnv): Promise<ServeTracing | undefined> {
  const url = tracesUrl(env);
  if (url === undefined || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const field = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = (env[field] || "http/protobuf").trim();
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new UsageError(
      `${field}: expected ${PROTOCOLS.join(" or ")} (tiller serve exports over HTTP), received ${JSON.stringify(protocol)}`,
    );
  }
  let modules: [
    typeof import("@opentelemetry/sdk-trace-node"),
    typeof import("@opentelemetry/resources"),
    { OTLPTraceExporter: typeof import("@opentelemetry/exporter-trace-otlp-proto").OTLPTraceExporter },
  ];
  try {
    modules = await Promise.all([
      import("@opentelemetry/sdk-trace-node"),
      import("@opentelemetry/resources"),
      protocol === "http/json"
        ? import("@opentelemetry/exporter-trace-otlp-http")
        : import("@opentelemetry/exporter-trace-otlp-proto"),
    ]);
  } catch (error) {
    throw new UsageError(
      `OTEL_EXPORTER_OTLP_ENDPOINT: the OpenTelemetry SDK is not installed (${errorMessage(error)}); install the package's optional dependencies`,
    );
  }
  const [
    { NodeTracerProvider, BatchSpanProcessor },
    { defaultResource, detectResources, envDetector, resourceFromAttributes },
    { OTLPTraceExporter },
  ] = modules;
  const version = await readFile(new URL("../../package.json", import.meta.url), "utf8").then(
    (text) => String(JSON.parse(text).version),
    () => undefined,
  );
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        "service.name": env.OTEL_SERVICE_NAME?.trim() || "tiller",
        ...(version ? { "service.version": version } : {}),
      }),
    )
    // OTEL_RESOURCE_ATTRIBUTES (and OTEL_SERVICE_NAME) as the SDK reads them.
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))],
  });
  // The global provider, the AsyncLocalStorage context manager and the W3C propagators.
  provider.register();
  return {
    description: `OTLP ${protocol} to ${url}`,
    shutdown: () => provider.shutdown(),
  };
}

/** The traces URL: the signal's own endpoint as given, or the base endpoint + `/v1/traces`. */
function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const own = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (own) return own;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return undefined;
  return `${base.replace(/\/+$/, "")}/v1/traces`;
}
