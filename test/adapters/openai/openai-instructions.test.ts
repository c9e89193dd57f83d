import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { createOpenAIModel } from "../../../src/adapters/openai/create-openai-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import type { GatewayConfigInput } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";
import type { TillerEvent } from "../../../src/events.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { silentLogger } from "../../../src/logger.js";
import { type FakeOpenAIServer, textStream, useFakeOpenAIServer } from "../../support/fake-openai-server.js";

// The gateway's `model` config reaches the wire: the instructions as the first system message of every
// call (however long the conversation, whatever the window keeps), the temperature, the token limit,
// and the silence timeout.

const fake = useFakeOpenAIServer();
let server: FakeOpenAIServer;

async function setup(config: GatewayConfigInput, system?: string) {
  server = await fake.start();
  const clock = new SimulatedClock();
  const model = createOpenAIModel({
    baseURL: server.url,
    model: "fake-model",
    clock,
    maxRetries: 0,
    ...(system ? { system } : {}),
  });
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({ config, model, channels: { web: channel }, clock, logger: silentLogger });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy || model.isBusy });
  const say = async (id: string, text: string) => {
    await gateway.receive({ session: "web:1", channel: "web", id, text });
    await idle();
  };
  await gateway.start();
  return { clock, channel, gateway, events, say };
}

describe("gateway config model: instructions, temperature, maxOutputTokens, timeoutMs", () => {
  it("sends the instructions first in every call, also once the window rotated the old turns away", async () => {
    const { gateway, channel, events, say } = await setup({
      model: {
        instructions: "You are Tiller's test bot. Answer in one line.",
        temperature: 0.2,
        maxOutputTokens: 64,
      },
      // Two turns fill the window (user + assistant records each): the third rotates the transcript.
      limits: { maxWindowRecords: 3 },
    });
    for (let turn = 1; turn <= 4; turn++) {
      server.reply({ stream: textStream([`answer ${turn}`]) });
      await say(`m${turn}`, `question ${turn}`);
    }
    expect(channel.sent.map((sent) => sent.text)).toEqual(["answer 1", "answer 2", "answer 3", "answer 4"]);
    expect(events.some((event) => event.type === "transcript.rotated")).toBe(true);
    for (const request of server.requests) {
      expect(request.body.messages[0]).toEqual({
        role: "system",
        content: "You are Tiller's test bot. Answer in one line.",
      });
      expect(request.body.messages.filter((m: { role: string }) => m.role === "system")).toHaveLength(1);
      expect(request.body.temperature).toBe(0.2);
      expect(request.body.max_tokens).toBe(64);
    }
    // The rotation really dropped history: the last call does not see the first question.
    const last = server.requests.at(-1)!.body.messages as Array<{ content: string }>;
    expect(last.map((message) => message.content)).not.toContain("question 1");
    await gateway.stop();
  });

  it("puts the provider's own system option first and the gateway's instructions after it", async () => {
    const { gateway, say } = await setup({ model: { instructions: "Gateway rules." } }, "Provider rules.");
    server.reply({ stream: textStream(["ok"]) });
    await say("m1", "hi");
    expect(server.requests[0]!.body.messages[0]).toEqual({
      role: "system",
      content: "Provider rules.\n\nGateway rules.",
    });
    await gateway.stop();
  });

  it("sends no system message, temperature or max_tokens when none is configured", async () => {
    const { gateway, say } = await setup({});
    server.reply({ stream: textStream(["ok"]) });
    await say("m1", "hi");
    const body = server.requests[0]!.body;
    expect(body.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(body).not.toHaveProperty("temperature");
    expect(body).not.toHaveProperty("max_tokens");
    await gateway.stop();
  });

  it("fails a call whose server stays silent past model.timeoutMs with MODEL_TIMEOUT, on the gateway's clock", async () => {
    const { clock, gateway, channel, events } = await setup({ model: { timeoutMs: 2000 } });
    server.reply({ hang: true });
    await gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "hi" });
    const sent = await server.waitForRequests(1);
    await clock.advance(1999);
    expect(sent.clientClosed).toBe(false);
    await clock.advance(1);
    await sent.closed;
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    const ended = events.find((event) => event.type === "model.ended");
    expect(ended).toMatchObject({ status: "failed", error: { code: "MODEL_TIMEOUT" } });
    expect(channel.sent).toHaveLength(1); // the notice that the model could not answer
    await gateway.stop();
  });

  it("refuses bad values with a ConfigError naming the field", () => {
    const bad: Array<[unknown, string]> = [
      [{ model: { temperature: 3 } }, "config.model.temperature"],
      [{ model: { temperature: "warm" } }, "config.model.temperature"],
      [{ model: { maxOutputTokens: 0 } }, "config.model.maxOutputTokens"],
      [{ model: { maxOutputTokens: 1.5 } }, "config.model.maxOutputTokens"],
      [{ model: { timeoutMs: -1 } }, "config.model.timeoutMs"],
      [{ model: { instructions: 42 } }, "config.model.instructions"],
      [{ model: { system: "Be brief." } }, "config.model"],
    ];
    for (const [config, field] of bad) {
      let thrown: unknown;
      try {
        createGateway({
          config: config as GatewayConfigInput,
          model: { complete: async () => ({ text: "", toolCalls: [] }) },
          channels: {},
        });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, JSON.stringify(config)).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).field).toBe(field);
    }
  });
});
