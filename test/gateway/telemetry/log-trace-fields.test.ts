import { Writable } from "node:stream";
import { context, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { traceFields } from "../../../src/trace-fields.js";

// Log lines written inside a span carry its trace_id and span_id; the gateway's own lines about a
// traced turn carry the turn span's.

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

function memoryLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { logger: pino({ level: "debug", base: null, mixin: traceFields }, stream), lines };
}

describe("trace ids in log lines", () => {
  it("a line inside a span carries it; a line outside carries none", async () => {
    const { logger, lines } = memoryLogger();
    const span = trace.getTracer("test").startSpan("work");
    await context.with(trace.setSpan(context.active(), span), async () => {
      await null;
      logger.info({ step: 1 }, "inside");
    });
    span.end();
    logger.info({ step: 2 }, "outside");
    expect(lines[0]).toMatchObject({
      trace_id: span.spanContext().traceId,
      span_id: span.spanContext().spanId,
    });
    expect(lines[1]).not.toHaveProperty("trace_id");
  });

  it("the gateway's lines about a turn carry the turn span's ids", async () => {
    const { logger, lines } = memoryLogger();
    const clock = new SimulatedClock();
    const gateway = createGateway({
      model: new ScriptedModel([{ reply: { delayMs: 100, text: "hi" } }], clock),
      channels: { web: new LoopbackChannel() },
      clock,
      logger,
    });
    await gateway.start();
    await gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "hello" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    await gateway.stop();
    const turn = exporter.getFinishedSpans().find((span) => span.name === "invoke_agent");
    const runId = turn?.attributes["tiller.run_id"];
    const aboutTurn = lines.filter((line) => line.runId === runId && line.msg === "model.called");
    expect(aboutTurn).toHaveLength(1);
    expect(aboutTurn[0]).toMatchObject({
      trace_id: turn?.spanContext().traceId,
      span_id: turn?.spanContext().spanId,
    });
  });
});
