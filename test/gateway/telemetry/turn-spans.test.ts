import { context, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import type { GatewayConfigInput } from "../../../src/config.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { silentLogger } from "../../../src/logger.js";
import { sleep } from "../../../src/ports/clock.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../../src/ports/model.js";
import { clockTool } from "../../support/gateway-on.js";

// The span tree of one turn as an operator's tracing backend gets it: an SDK registered globally (as
// `tiller serve` does), an in-memory exporter, a turn with a tool call, a steer and a re-check.

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => provider.register());
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

/** Call 1 asks for the tool; call 2 drafts (a message arrives meanwhile); the re-check answers it. */
function scriptedModel(clock: SimulatedClock): ModelProvider {
  return {
    async complete(request: ModelRequest): Promise<ModelReply> {
      await sleep(clock, 100, request.signal);
      if (request.call === 1) {
        return {
          text: "",
          toolCalls: [{ callId: "c1", name: "forecast", args: {} }],
          finishReason: "tool_calls",
        };
      }
      const usage = { inputTokens: 10 * request.call, outputTokens: 5, totalTokens: 10 * request.call + 5 };
      const text = request.recheck ? "Rome: sunny, 24 degrees." : "Paris: cloudy.";
      return { text, toolCalls: [], finishReason: "stop", usage };
    },
  };
}

function gatewayWithSpans(config: GatewayConfigInput = {}) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    model: scriptedModel(clock),
    tools: [clockTool("forecast", 200, true, () => clock)],
    channels: { web: channel },
    clock,
    config,
    logger: silentLogger,
    telemetry: { model: "scripted-1" },
  });
  const settle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  return { gateway, clock, settle };
}

const byName = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe("turn spans", () => {
  it("a turn with a tool, a steer and a re-check is one invoke_agent span with its calls and send as children", async () => {
    const { gateway, clock, settle } = gatewayWithSpans();
    await gateway.start();
    const caller = trace.getTracer("test").startSpan("POST /v1/sessions/web:1/messages");
    await context.with(trace.setSpan(context.active(), caller), () =>
      gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "weather in Paris tomorrow?" }),
    );
    caller.end();
    await clock.advance(150); // inside the tool call
    await gateway.receive({ session: "web:1", channel: "web", id: "m2", text: "sorry, I meant Rome" });
    await clock.advance(200); // the second call drafts
    await gateway.receive({
      session: "web:1",
      channel: "web",
      id: "m3",
      text: "Rome, Italy, the weather there",
    });
    await settle();
    await gateway.stop();

    const spans = exporter.getFinishedSpans();
    const [turn, ...extra] = byName(spans, "invoke_agent");
    expect(extra).toEqual([]);
    if (!turn) throw new Error("no invoke_agent span");
    expect(parentOf(turn)).toBeUndefined();
    expect(turn.links.map((link) => link.context.spanId)).toEqual([caller.spanContext().spanId]);
    expect(turn.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "tiller.session": "web:1",
      "tiller.trigger": "user",
      "tiller.lane": "main",
      "tiller.lane.wait_ms": 0,
      "tiller.recheck.passes": 1,
      "tiller.turn.status": "done",
    });
    const runId = turn.attributes["tiller.run_id"];
    expect(typeof runId).toBe("string");
    // m2 joins before the second call; m3, arriving while that call drafts, makes the draft stale and
    // joins the re-check's call.
    expect(turn.events.map((event) => [event.name, event.attributes])).toEqual([
      ["tiller.steer", { "tiller.message_ids": ["m2"] }],
      [
        "tiller.recheck",
        {
          "tiller.recheck.reason": "newer-message",
          "tiller.recheck.outcome": "fired",
          "tiller.recheck.pass": 1,
        },
      ],
      ["tiller.steer", { "tiller.message_ids": ["m3"] }],
    ]);

    const chats = byName(spans, "chat scripted-1");
    expect(
      chats.map((span) => [span.attributes["tiller.model.call"], span.attributes["tiller.recheck"]]),
    ).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    for (const chat of chats) {
      expect(parentOf(chat)).toBe(turn.spanContext().spanId);
      expect(chat.attributes["gen_ai.operation.name"]).toBe("chat");
      expect(chat.attributes["gen_ai.request.model"]).toBe("scripted-1");
    }
    expect(chats[0]?.attributes["gen_ai.usage.input_tokens"]).toBeUndefined();
    expect(chats[2]?.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 30,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.response.finish_reasons": ["stop"],
    });

    const [tool] = byName(spans, "execute_tool forecast");
    expect(parentOf(tool!)).toBe(turn.spanContext().spanId);
    expect(tool?.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "forecast",
      "gen_ai.tool.call.id": "c1",
      "tiller.tool.status": "done",
    });

    const deliveries = byName(spans, "tiller.deliver").filter(
      (span) => span.attributes["tiller.delivery.kind"] === "reply",
    );
    expect(deliveries).toHaveLength(1);
    expect(parentOf(deliveries[0]!)).toBe(turn.spanContext().spanId);
    expect(deliveries[0]?.attributes).toMatchObject({
      "tiller.delivery.outcome": "delivered",
      "tiller.run_id": runId,
    });
    expect(typeof deliveries[0]?.attributes["tiller.delivery.id"]).toBe("string");
    // Every span of the turn is in one trace.
    for (const span of [...chats, tool!, deliveries[0]!]) {
      expect(span.spanContext().traceId).toBe(turn.spanContext().traceId);
    }
  });

  it("a turn that waited for a lane slot says how long, and links only the receive() that queued it", async () => {
    const { gateway, settle } = gatewayWithSpans({ lanes: { main: 1 } });
    const waits: Record<string, number> = {};
    gateway.subscribe((event) => {
      if (event.type === "lane.started" && event.session) waits[event.session] = event.waitedMs;
    });
    await gateway.start();
    const callers = ["A", "B"].map((name) => trace.getTracer("test").startSpan(`receive ${name}`));
    for (const [index, caller] of callers.entries()) {
      await context.with(trace.setSpan(context.active(), caller), () =>
        gateway.receive({ session: `web:${index}`, channel: "web", id: `q${index}`, text: "quick one" }),
      );
    }
    await settle();
    await gateway.stop();
    const turns = byName(exporter.getFinishedSpans(), "invoke_agent");
    expect(turns.map((turn) => turn.attributes["tiller.session"])).toEqual(["web:0", "web:1"]);
    expect(turns.map((turn) => turn.links.map((link) => link.context.spanId))).toEqual(
      callers.map((caller) => [caller.spanContext().spanId]),
    );
    expect(waits["web:1"]).toBeGreaterThan(0);
    expect(turns.map((turn) => turn.attributes["tiller.lane.wait_ms"])).toEqual([0, waits["web:1"]]);
  });
});
