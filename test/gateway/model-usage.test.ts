import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { createOpenAIModel } from "../../src/adapters/openai/create-openai-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelProvider } from "../../src/ports/model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { textStream, toolCallStream, useFakeOpenAIServer } from "../support/fake-openai-server.js";

// Token usage as a user reads it: per model call on model.ended, summed per turn on turn.ended, and in
// explain() for the message the turn answered.

const fake = useFakeOpenAIServer();

const lookup: ToolDefinition = {
  name: "lookup",
  description: "Looks a word up.",
  parameters: { type: "object", properties: { word: { type: "string" } } },
  cancellable: false,
  execute: async () => "a small boat",
};

function gatewayWith(model: ModelProvider & { isBusy?: boolean }, clock: SimulatedClock) {
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    model,
    tools: [lookup],
    channels: { web: channel },
    clock,
    logger: silentLogger,
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy || Boolean(model.isBusy) });
  return { gateway, events, channel, idle };
}

describe("model usage", () => {
  it("asks the OpenAI-compatible server for usage and reports it per call, per turn and in explain", async () => {
    const server = await fake.start([
      { stream: toolCallStream([{ id: "call_1", name: "lookup", args: { word: "dinghy" } }]) }, // 20 in, 10 out
      { stream: textStream(["A dinghy is a small boat."], { usage: [40, 6] }) },
    ]);
    const clock = new SimulatedClock();
    const model = createOpenAIModel({ baseURL: server.url, model: "fake-model", clock });
    const { gateway, events, channel, idle } = gatewayWith(model, clock);
    await gateway.start();
    await gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "what is a dinghy?" });
    await idle();

    expect(channel.sent.map((sent) => sent.text)).toEqual(["A dinghy is a small boat."]);
    expect(server.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    const calls = events.flatMap((event) => (event.type === "model.ended" ? [event.usage] : []));
    expect(calls).toEqual([
      { inputTokens: 20, outputTokens: 10, totalTokens: 30 },
      { inputTokens: 40, outputTokens: 6, totalTokens: 46 },
    ]);
    const ended = events.find((event) => event.type === "turn.ended");
    expect(ended).toMatchObject({
      status: "done",
      usage: { inputTokens: 60, outputTokens: 16, totalTokens: 76 },
    });
    const explained = gateway.explain("web:1", "m1");
    expect(explained?.usage).toEqual({ inputTokens: 60, outputTokens: 16, calls: 2 });
    expect(explained?.timeline.map((line) => line.what)).toContain(
      `model call 2 of ${ended?.runId} used 40 input and 6 output tokens`,
    );
    await gateway.stop();
  });

  it("takes { inputTokens, outputTokens } from any provider, and reports no usage when there is none", async () => {
    const clock = new SimulatedClock();
    const replies = [
      { text: "counted", toolCalls: [], usage: { inputTokens: 7, outputTokens: 3 } },
      { text: "not counted", toolCalls: [] },
    ];
    const { gateway, events, idle } = gatewayWith({ complete: async () => replies.shift()! }, clock);
    await gateway.start();
    await gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "one" });
    await idle();
    await gateway.receive({ session: "web:1", channel: "web", id: "m2", text: "two" });
    await idle();
    const ends = events.filter((event) => event.type === "turn.ended");
    expect(ends[0]).toMatchObject({ usage: { inputTokens: 7, outputTokens: 3, totalTokens: 10 } });
    expect(ends[1]).not.toHaveProperty("usage");
    expect(gateway.explain("web:1", "m2")).not.toHaveProperty("usage");
    await gateway.stop();
  });
});
