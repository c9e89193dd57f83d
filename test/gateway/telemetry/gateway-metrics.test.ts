import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { createGatewayMetrics } from "../../../src/gateway/telemetry/gateway-metrics.js";
import { silentLogger } from "../../../src/logger.js";
import { sleep } from "../../../src/ports/clock.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../../src/ports/model.js";
import { clockTool } from "../../support/gateway-on.js";
import { parsePrometheus } from "../../support/prometheus.js";

// The Prometheus families after a scripted conversation: a turn with a tool, a steer and a re-check,
// a follow-up queued behind it, and a model that reports tokens on some calls only.

function scriptedModel(clock: SimulatedClock): ModelProvider {
  return {
    async complete(request: ModelRequest): Promise<ModelReply> {
      await sleep(clock, 1500, request.signal);
      if (request.call === 1 && request.runId.endsWith("first")) {
        return { text: "", toolCalls: [{ callId: "c1", name: "forecast", args: {} }] };
      }
      const text =
        request.runId === "second"
          ? "Yes, the museum is open today."
          : request.recheck
            ? "Rome: sunny."
            : "Paris: cloudy.";
      return { text, toolCalls: [], usage: { inputTokens: 100, outputTokens: 20, totalTokens: 120 } };
    },
  };
}

describe("gateway metrics", () => {
  it("count messages, turns, model and tool calls, re-checks, sends and tokens as the conversation had them", async () => {
    const clock = new SimulatedClock();
    const metrics = createGatewayMetrics();
    const runIds = ["first", "second"];
    const gateway = createGateway({
      model: scriptedModel(clock),
      tools: [clockTool("forecast", 2000, true, () => clock)],
      channels: { web: metrics.channel(new LoopbackChannel({ now: () => clock.now() })) },
      clock,
      logger: silentLogger,
      newRunId: () => runIds.shift() ?? "other",
    });
    metrics.observe(gateway);
    await gateway.start();
    const send = (id: string, text: string, mode?: string) =>
      gateway.receive({ session: "web:1", channel: "web", id, text, ...(mode ? { mode } : {}) });
    await send("m1", "weather in Paris tomorrow?");
    await clock.advance(2000); // inside the tool
    await send("m2", "sorry, I meant Rome");
    await send("m3", "and is the museum open?", "followup");
    await clock.advance(2000); // the second call drafts
    await send("m4", "Rome, Italy, the weather there");
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    await gateway.stop();

    const m = parsePrometheus(await metrics.registry.metrics());
    expect(m.value("tiller_messages_total", { disposition: "started" })).toBe(1);
    expect(m.value("tiller_messages_total", { disposition: "steered" })).toBe(2);
    expect(m.value("tiller_messages_total", { disposition: "queued" })).toBe(1);
    expect(m.value("tiller_turns_total", { status: "done", trigger: "user" })).toBe(2);
    expect(m.value("tiller_turn_duration_seconds_count", {})).toBe(2);
    // The first turn: tool call (1.5 s), tool (2 s), draft (1.5 s), re-check (1.5 s) = 6.5 s.
    expect(m.value("tiller_turn_duration_seconds_bucket", { le: "4" })).toBe(1);
    expect(m.value("tiller_turn_duration_seconds_bucket", { le: "8" })).toBe(2);
    expect(m.value("tiller_model_calls_total", { status: "done" })).toBe(4);
    expect(m.value("tiller_model_call_duration_seconds_bucket", { le: "1" })).toBe(0);
    expect(m.value("tiller_model_call_duration_seconds_bucket", { le: "2" })).toBe(4);
    expect(m.value("tiller_tool_calls_total", { tool: "forecast", status: "done" })).toBe(1);
    expect(m.samples.filter((sample) => sample.name === "tiller_recheck_total")).toEqual([
      { name: "tiller_recheck_total", labels: { outcome: "fired", reason: "newer-message" }, value: 1 },
    ]);
    expect(m.value("tiller_deliveries_total", { kind: "reply", outcome: "delivered" })).toBe(2);
    // Three calls reported usage; the tool-call one did not.
    expect(m.value("tiller_gen_ai_tokens_total", { type: "input" })).toBe(300);
    expect(m.value("tiller_gen_ai_tokens_total", { type: "output" })).toBe(60);
    expect(m.value("tiller_lane_wait_seconds_count", { lane: "main" })).toBe(2);
    expect(m.value("tiller_lane_active", { lane: "main" })).toBe(0);
  });
});
