/**
 * The cost of tracing: receive → first model call (a live session) and turns per second, with no SDK
 * registered, with the Node SDK and an exporter that drops every span, and with the OTLP/HTTP protobuf
 * exporter sending to a receiver in this process. The three run interleaved in rounds (each on a fresh
 * gateway), so each sees equally warm code; the figures are medians over the rounds and ratios to the
 * no-SDK run.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { context, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { settle } from "../src/adapters/simulated-clock.js";
import { SystemClock } from "../src/adapters/system-clock.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { createTurnTracer } from "../src/gateway/telemetry/turn-tracer.js";
import { silentLogger } from "../src/logger.js";
import type { ModelProvider, ModelReply } from "../src/ports/model.js";
import { envNumber, type Figures, median, NullChannel, percentile, round } from "./bench-support.js";

const ROUNDS = envNumber("TILLER_BENCH_TRACING_ROUNDS", 5);
const TURNS = envNumber("TILLER_BENCH_TRACING_TURNS", 600);
const SESSIONS = 50;

type Mode = "noSdk" | "sdkNoopExporter" | "sdkOtlp";

/** Drops every span: what the SDK itself costs. */
const dropping: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};

class StampingModel implements ModelProvider {
  enteredAt = Number.NaN;
  async complete(): Promise<ModelReply> {
    this.enteredAt = performance.now();
    return { text: "ok", toolCalls: [] };
  }
}

async function receiver() {
  let spansBytes = 0;
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => {
      spansBytes += chunk.length;
    });
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    bytes: () => spansBytes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One round of one mode: `TURNS` turns over `SESSIONS` live sessions, each left to finish. */
async function runMode(
  mode: Mode,
  otlpUrl: string,
): Promise<{ firstCallUs: number; turnsPerSecond: number }> {
  let provider: NodeTracerProvider | undefined;
  if (mode !== "noSdk") {
    const exporter = mode === "sdkOtlp" ? new OTLPTraceExporter({ url: otlpUrl }) : dropping;
    provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
    provider.register();
  }
  const model = new StampingModel();
  const gateway = createGateway({
    model,
    channels: { bench: new NullChannel() },
    clock: new SystemClock(),
    logger: silentLogger,
    telemetry: { model: "bench" },
  });
  await gateway.start();
  const firstCalls: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < TURNS; i++) {
    const sent = performance.now();
    await gateway.receive({
      session: `s:${i % SESSIONS}`,
      channel: "bench",
      text: "hello there",
      id: `m${i}`,
    });
    await settle();
    if (i >= SESSIONS) firstCalls.push((model.enteredAt - sent) * 1000);
  }
  const seconds = (performance.now() - t0) / 1000;
  await gateway.stop();
  if (provider) {
    await provider.shutdown();
    trace.disable();
    context.disable();
  }
  firstCalls.sort((a, b) => a - b);
  return { firstCallUs: percentile(firstCalls, 50), turnsPerSecond: TURNS / seconds };
}

/** With no SDK: what the tracer's look at one event costs (the events of a turn pass through it). */
function observeCostNs(): number {
  const tracer = createTurnTracer();
  const event = { type: "model.called", at: 0, session: "s", runId: "r", call: 1, recheck: false } as const;
  const n = 2_000_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) tracer.observe(event as never);
  return ((performance.now() - t0) * 1e6) / n;
}

export async function benchTracing(): Promise<Figures> {
  const otlp = await receiver();
  const modes: Mode[] = ["noSdk", "sdkNoopExporter", "sdkOtlp"];
  const results = new Map<Mode, Array<{ firstCallUs: number; turnsPerSecond: number }>>(
    modes.map((mode) => [mode, []]),
  );
  await runMode("noSdk", otlp.url); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    // A different order each round, so no mode always runs on the warmest code.
    for (const mode of round % 2 ? [...modes].reverse() : modes)
      results.get(mode)!.push(await runMode(mode, otlp.url));
  }
  await otlp.close();
  const figures: Figures = { "tracing.rounds": ROUNDS, "tracing.turnsPerRound": TURNS };
  const base = results.get("noSdk")!;
  const baseFirst = median(base.map((r) => r.firstCallUs));
  const baseRate = median(base.map((r) => r.turnsPerSecond));
  // Noise: how far the no-SDK rounds spread around their own median.
  const spread = Math.max(...base.map((r) => Math.abs(r.turnsPerSecond / baseRate - 1)));
  for (const mode of modes) {
    const first = median(results.get(mode)!.map((r) => r.firstCallUs));
    const rate = median(results.get(mode)!.map((r) => r.turnsPerSecond));
    figures[`tracing.${mode}.firstCallUs.median`] = round(first, 1);
    figures[`tracing.${mode}.turnsPerSecond`] = round(rate, 0);
    if (mode !== "noSdk") {
      figures[`tracing.${mode}.firstCall.ratioToNoSdk`] = round(first / baseFirst, 2);
      figures[`tracing.${mode}.turnsPerSecond.ratioToNoSdk`] = round(rate / baseRate, 2);
    }
  }
  figures["tracing.noSdk.roundSpread"] = round(spread, 3);
  const perEvent = observeCostNs();
  figures["tracing.noSdk.observeNsPerEvent"] = round(perEvent, 1);
  // About 15 events pass the tracer from receive() to the first model call of a turn.
  figures["tracing.noSdk.shareOfFirstCall"] = round((15 * perEvent) / 1000 / baseFirst, 4);
  figures["tracing.noSdk.shareOfFirstCall.target"] = "< 0.01";
  figures["tracing.otlp.bytesReceived"] = otlp.bytes();
  return figures;
}
