import { describe, expect, it } from "vitest";
import { createAnthropicModel } from "../../../src/adapters/anthropic/create-anthropic-model.js";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { ModelError } from "../../../src/errors.js";
import type { TillerEvent } from "../../../src/events.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { silentLogger } from "../../../src/logger.js";
import type { ModelRequest } from "../../../src/ports/model.js";
import type { ToolDefinition } from "../../../src/ports/tool.js";
import {
  anthropicError,
  anthropicStreamError,
  anthropicText,
  anthropicToolUse,
  useFakeAnthropicServer,
} from "../../support/fake-anthropic-server.js";

// createAnthropicModel (the AI SDK's Anthropic provider on createAISDKModel) talking to a local fake of
// the Messages API over a real socket: the request it makes, the stream it reads, the errors it types.

const fake = useFakeAnthropicServer();

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    session: "web:1",
    runId: "web:1#1",
    call: 1,
    recheck: false,
    recovery: false,
    review: false,
    context: [{ role: "user", text: "hi", messageId: "m1" }],
    turnStart: 0,
    tools: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("createAnthropicModel against the Messages API fake", () => {
  it("posts to /v1/messages with the key, the system prompt and stream: true, and reads text deltas and usage", async () => {
    const server = await fake.start([{ stream: anthropicText(["Hel", "lo", "!"], [25, 10]) }]);
    const model = createAnthropicModel({ model: "claude-fake", apiKey: "sk-ant-test", baseURL: server.url });
    const deltas: string[] = [];
    const reply = await model.complete(
      request({ instructions: "Be brief.", maxOutputTokens: 300, onDelta: (delta) => deltas.push(delta) }),
    );
    expect(deltas).toEqual(["Hel", "lo", "!"]);
    expect(reply).toEqual({
      text: "Hello!",
      toolCalls: [],
      finishReason: "stop",
      usage: { inputTokens: 25, outputTokens: 10, totalTokens: 35 },
    });
    const sent = server.requests[0]!;
    expect(sent.path).toBe("/v1/messages");
    expect(sent.headers["x-api-key"]).toBe("sk-ant-test");
    expect(sent.headers["anthropic-version"]).toBe("2023-06-01");
    expect(sent.body).toMatchObject({
      model: "claude-fake",
      stream: true,
      max_tokens: 300,
      system: [{ type: "text", text: "Be brief." }],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    });
  });

  it("sends tools with their JSON Schemas, assembles tool_use from input_json_delta, and returns results as tool_result", async () => {
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const server = await fake.start([
      {
        stream: anthropicToolUse([{ id: "toolu_01", name: "weather", input: { city: "Oslo" } }], {
          text: "Looking.",
        }),
      },
    ]);
    const model = createAnthropicModel({ model: "claude-fake", apiKey: "k", baseURL: server.url });
    const reply = await model.complete(
      request({
        tools: [{ name: "weather", description: "The weather in a city.", parameters: schema }],
        context: [
          { role: "user", text: "weather in Paris and Oslo?", messageId: "m1" },
          { role: "toolCall", callId: "toolu_00", name: "weather", args: { city: "Paris" } },
          { role: "toolResult", callId: "toolu_00", status: "failed", result: "service down" },
        ],
      }),
    );
    expect(reply).toMatchObject({
      text: "Looking.",
      toolCalls: [{ callId: "toolu_01", name: "weather", args: { city: "Oslo" } }],
      finishReason: "tool_calls",
      usage: { inputTokens: 30, outputTokens: 12 },
    });
    const body = server.requests[0]!.body;
    expect(body.tools).toMatchObject([
      { name: "weather", description: "The weather in a city.", input_schema: schema },
    ]);
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "weather in Paris and Oslo?" }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_00", name: "weather", input: { city: "Paris" } }],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_00",
            content: '{"status":"failed","result":"service down"}',
            is_error: true,
          },
        ],
      },
    ]);
  });

  it("types Anthropic's errors: 429 and 529 retried on the clock (Retry-After honoured), 401 not", async () => {
    const server = await fake.start([
      {
        status: 429,
        body: anthropicError("rate_limit_error", "Number of request tokens has exceeded your rate limit"),
        headers: { "retry-after": "2" },
      },
      { status: 529, body: anthropicError("overloaded_error", "Overloaded") },
      { stream: anthropicText(["fine"]) },
      { status: 401, body: anthropicError("authentication_error", "invalid x-api-key") },
    ]);
    const clock = new SimulatedClock();
    const model = createAnthropicModel({
      model: "claude-fake",
      apiKey: "k",
      baseURL: server.url,
      clock,
      random: () => 0.5,
    });
    const pending = model.complete(request());
    await clock.runUntilIdle({ isBusy: () => model.isBusy });
    expect((await pending).text).toBe("fine");
    expect(server.requests).toHaveLength(3);
    expect(clock.now()).toBeGreaterThanOrEqual(2000);

    const denied = await failure(model.complete(request()));
    expect(denied).toMatchObject({ code: "MODEL_AUTH", status: 401, retryable: false });
    expect(denied.message).toContain("invalid x-api-key");
  });

  it("reports each error code when retries are used up, with the server's words", async () => {
    const server = await fake.start([
      { status: 429, body: anthropicError("rate_limit_error", "slow down") },
      { status: 529, body: anthropicError("overloaded_error", "Overloaded") },
      { status: 400, body: anthropicError("invalid_request_error", "messages: roles must alternate") },
    ]);
    const model = createAnthropicModel({
      model: "claude-fake",
      apiKey: "k",
      baseURL: server.url,
      maxRetries: 0,
    });
    expect(await failure(model.complete(request()))).toMatchObject({
      code: "MODEL_RATE_LIMITED",
      retryable: true,
      status: 429,
    });
    expect(await failure(model.complete(request()))).toMatchObject({
      code: "MODEL_UNAVAILABLE",
      retryable: true,
      status: 529,
    });
    const bad = await failure(model.complete(request()));
    expect(bad).toMatchObject({ code: "MODEL_BAD_REQUEST", retryable: false });
    expect(bad.message).toContain("roles must alternate");
  });

  it("fails a stream broken by an overloaded_error event after text as MODEL_STREAM_INTERRUPTED, not retried", async () => {
    const steps = anthropicText(["Partly"]).slice(0, 4);
    const server = await fake.start([
      { stream: [...steps, anthropicStreamError("overloaded_error", "Overloaded")] },
    ]);
    const model = createAnthropicModel({ model: "claude-fake", apiKey: "k", baseURL: server.url });
    expect(await failure(model.complete(request()))).toMatchObject({ code: "MODEL_STREAM_INTERRUPTED" });
    expect(server.requests).toHaveLength(1);
  });

  it("closes the HTTP stream when the turn is aborted", async () => {
    const server = await fake.start([{ hang: true }]);
    const model = createAnthropicModel({ model: "claude-fake", apiKey: "k", baseURL: server.url });
    const turn = new AbortController();
    const pending = model.complete(request({ signal: turn.signal }));
    const sent = await server.waitForRequests(1);
    turn.abort(new Error("/stop"));
    await expect(pending).rejects.toThrow("/stop");
    await sent.closed;
    expect(sent.clientClosed).toBe(true);
  });

  it("runs a gateway turn with a tool round trip: the tool result reaches Anthropic under its tool_use id", async () => {
    const server = await fake.start([
      { stream: anthropicToolUse([{ id: "toolu_01", name: "weather", input: { city: "Oslo" } }]) },
      { stream: anthropicText(["Oslo is sunny."], [60, 5]) },
    ]);
    const clock = new SimulatedClock();
    const model = createAnthropicModel({ model: "claude-fake", apiKey: "k", baseURL: server.url, clock });
    const weather: ToolDefinition = {
      name: "weather",
      description: "The weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      cancellable: false,
      execute: async (args) => ({ city: args.city, sky: "sunny" }),
    };
    const channel = new LoopbackChannel({ now: () => clock.now() });
    const gateway = createGateway({
      config: { model: { instructions: "You report the weather." } },
      model,
      tools: [weather],
      channels: { web: channel },
      clock,
      logger: silentLogger,
    });
    const events: TillerEvent[] = [];
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    await gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "weather in Oslo?" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy || model.isBusy });

    expect(channel.sent.map((sent) => sent.text)).toEqual(["Oslo is sunny."]);
    const second = server.requests[1]!.body;
    expect(second.system).toEqual([{ type: "text", text: "You report the weather." }]);
    expect(second.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_01", content: '{"city":"Oslo","sky":"sunny"}' }],
    });
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      status: "done",
      usage: { inputTokens: 90, outputTokens: 17 },
    });
    await gateway.stop();
  });
});
