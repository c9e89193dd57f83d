import { describe, expect, it } from "vitest";
import { createOpenAIModel } from "../../../src/adapters/openai/create-openai-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { ConfigError, ModelError } from "../../../src/errors.js";
import type { ModelRequest } from "../../../src/ports/model.js";
import {
  chunk,
  type FakeOpenAIServer,
  gate,
  textStream,
  toolCallStream,
  useFakeOpenAIServer,
} from "../../support/fake-openai-server.js";

// The OpenAI-compatible provider against a local server speaking the real wire format (SSE chunks and
// `[DONE]`), on a simulated clock: streaming, tool calls split across chunks, errors, retries, abort.

const fake = useFakeOpenAIServer();
let server: FakeOpenAIServer;

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    session: "web:1",
    runId: "web:1#r1",
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

async function setup(options: { maxRetries?: number; timeoutMs?: number; apiKey?: string } = {}) {
  server = await fake.start();
  const clock = new SimulatedClock();
  const model = createOpenAIModel({
    baseURL: server.url,
    model: "fake-model",
    clock,
    random: () => 0.5,
    ...options,
  });
  // Simulated time moves only while no HTTP exchange is in flight: retries wait on the clock.
  const idle = () => clock.runUntilIdle({ isBusy: () => model.isBusy });
  return { clock, model, idle };
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("createOpenAIModel", () => {
  it("streams text deltas to onDelta as they arrive and reports the finish reason and usage", async () => {
    const { model } = await setup({ apiKey: "sk-test" });
    const second = gate();
    server.reply({
      stream: [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Hel" }),
        { pause: second.promise },
        chunk({ content: "lo!" }),
        chunk({}, "stop"),
        {
          chunk: {
            id: "x",
            object: "chat.completion.chunk",
            created: 1,
            model: "m",
            choices: [],
            usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
          },
        },
        { done: true },
      ],
    });
    const deltas: string[] = [];
    const reply = model.complete(
      request({
        onDelta: (text) => {
          deltas.push(text);
          // The first piece arrived while the server still holds the rest back.
          if (text === "Hel") second.open();
        },
      }),
    );
    await expect(reply).resolves.toEqual({
      text: "Hello!",
      toolCalls: [],
      finishReason: "stop",
      usage: { inputTokens: 12, outputTokens: 3, totalTokens: 15 },
    });
    expect(deltas).toEqual(["Hel", "lo!"]);
    const sent = server.requests[0]!;
    expect(sent.path).toBe("/v1/chat/completions");
    expect(sent.headers.authorization).toBe("Bearer sk-test");
    expect(sent.body).toMatchObject({
      model: "fake-model",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi" }],
    });
    expect(sent.body).not.toHaveProperty("tools");
  });

  it("sends no Authorization header without an API key, and the tools as function schemas", async () => {
    const { model } = await setup();
    server.reply({ stream: textStream(["ok"]) });
    const parameters = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
    await model.complete(
      request({ tools: [{ name: "read_file", description: "Read a file.", parameters }] }),
    );
    const sent = server.requests[0]!;
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body.tools).toEqual([
      { type: "function", function: { name: "read_file", description: "Read a file.", parameters } },
    ]);
  });

  it("assembles a tool call whose arguments are split across chunks", async () => {
    const { model } = await setup();
    server.reply({
      stream: toolCallStream([{ id: "call_1", name: "read_file", args: { path: "notes/todo.md" } }], {
        pieces: 4,
        text: "Let me look.",
      }),
    });
    const reply = await model.complete(request());
    expect(reply).toMatchObject({
      text: "Let me look.",
      toolCalls: [{ callId: "call_1", name: "read_file", args: { path: "notes/todo.md" } }],
      finishReason: "tool_calls",
      usage: { inputTokens: 20, outputTokens: 10, totalTokens: 30 },
    });
  });

  it("assembles two parallel tool calls interleaved chunk by chunk, by index", async () => {
    const { model } = await setup();
    server.reply({
      stream: toolCallStream(
        [
          { id: "call_a", name: "search", args: { query: "deploy notes", limit: 3 } },
          { id: "call_b", name: "read_file", args: { path: "README.md" } },
        ],
        { pieces: 3 },
      ),
    });
    const reply = await model.complete(request());
    expect(reply.toolCalls).toEqual([
      { callId: "call_a", name: "search", args: { query: "deploy notes", limit: 3 } },
      { callId: "call_b", name: "read_file", args: { path: "README.md" } },
    ]);
  });

  it("waits the Retry-After of a 429 on the clock, then retries", async () => {
    const { clock, model, idle } = await setup();
    server.reply(
      { status: 429, headers: { "retry-after": "2" }, body: { error: { message: "Rate limit reached" } } },
      { stream: textStream(["after the wait"]) },
    );
    const reply = model.complete(request());
    await idle();
    await expect(reply).resolves.toMatchObject({ text: "after the wait" });
    expect(server.requests).toHaveLength(2);
    expect(clock.now()).toBe(2000);
  });

  it("retries a 500 with exponential backoff and jitter, and fails as MODEL_UNAVAILABLE when it stays down", async () => {
    const { clock, model, idle } = await setup({ maxRetries: 2 });
    const down = { status: 500, body: { error: { message: "upstream exploded" } } };
    server.reply(down, down, down);
    const reply = model.complete(request());
    const settled = failure(reply);
    await idle();
    const error = await settled;
    expect(error).toMatchObject({ code: "MODEL_UNAVAILABLE", retryable: true, status: 500 });
    expect(error.message).toContain("upstream exploded");
    expect(server.requests).toHaveLength(3);
    // 500 ms then 1000 ms ceilings, of which half plus half the jitter (0.5) is waited: 375 + 750.
    expect(clock.now()).toBe(1125);
  });

  it("does not retry a refused key (MODEL_AUTH) or a bad request (MODEL_BAD_REQUEST)", async () => {
    const { model } = await setup();
    server.reply(
      { status: 401, body: { error: { message: "Incorrect API key provided" } } },
      { status: 400, body: { error: { message: "Invalid 'messages[1].tool_call_id'" } } },
    );
    const auth = await failure(model.complete(request()));
    expect(auth).toMatchObject({ code: "MODEL_AUTH", retryable: false, status: 401 });
    expect(auth.message).toContain("Incorrect API key provided");
    const bad = await failure(model.complete(request()));
    expect(bad).toMatchObject({ code: "MODEL_BAD_REQUEST", retryable: false, status: 400 });
    expect(bad.message).toContain("tool_call_id");
    expect(server.requests).toHaveLength(2);
  });

  it("fails a stream cut mid-way as MODEL_STREAM_INTERRUPTED and never regenerates it", async () => {
    const { model, idle } = await setup({ maxRetries: 2 });
    server.reply({
      stream: [chunk({ role: "assistant", content: "" }), chunk({ content: "Half a rep" }), { cut: true }],
    });
    const deltas: string[] = [];
    const settled = failure(model.complete(request({ onDelta: (text) => deltas.push(text) })));
    await idle();
    const error = await settled;
    expect(error).toMatchObject({ code: "MODEL_STREAM_INTERRUPTED", retryable: false });
    expect(error.message).toContain("10 characters received");
    expect(deltas).toEqual(["Half a rep"]);
    expect(server.requests).toHaveLength(1);
  });

  it("retries a stream that closed before its first chunk: nothing of the reply was seen", async () => {
    const { model, idle } = await setup();
    server.reply({ stream: [{ cut: true }] }, { stream: textStream(["second try"]) });
    const reply = model.complete(request());
    await idle();
    await expect(reply).resolves.toMatchObject({ text: "second try" });
    expect(server.requests).toHaveLength(2);
  });

  it("fails a malformed chunk as MODEL_REPLY_INVALID", async () => {
    const { model, idle } = await setup();
    server.reply({ stream: [chunk({ role: "assistant", content: "" }), { raw: "data: {not json\n\n" }] });
    const settled = failure(model.complete(request()));
    await idle();
    expect(await settled).toMatchObject({ code: "MODEL_REPLY_INVALID", retryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it("closes the HTTP stream at once when the request's signal aborts mid-stream", async () => {
    const { model } = await setup();
    const never = gate();
    server.reply({
      stream: [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Working on" }),
        { pause: never.promise },
      ],
    });
    const controller = new AbortController();
    const stop = new Error("stopped by /stop");
    const reply = model.complete(
      request({ signal: controller.signal, onDelta: () => controller.abort(stop) }),
    );
    await expect(reply).rejects.toBe(stop);
    const sent = server.requests[0]!;
    // The server still holds the rest of the reply back: only the client can have closed the socket.
    await sent.closed;
    expect(sent.clientClosed).toBe(true);
    expect(model.isBusy).toBe(false);
    never.open();
  });

  it("gives up on a server that never answers after timeoutMs on the clock (MODEL_TIMEOUT) and closes the socket", async () => {
    const { clock, model } = await setup({ timeoutMs: 5000, maxRetries: 0 });
    server.reply({ hang: true });
    const settled = failure(model.complete(request()));
    const sent = await server.waitForRequests(1);
    await clock.advance(5000);
    expect(await settled).toMatchObject({ code: "MODEL_TIMEOUT", retryable: true });
    await sent.closed;
    expect(sent.clientClosed).toBe(true);
  });

  it("fails a stream that falls silent past timeoutMs after it began as MODEL_STREAM_INTERRUPTED, without a retry", async () => {
    const { clock, model } = await setup({ timeoutMs: 5000, maxRetries: 2 });
    const never = gate();
    server.reply({
      stream: [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Partly" }),
        { pause: never.promise },
      ],
    });
    let firstDelta!: () => void;
    const delta = new Promise<void>((resolve) => {
      firstDelta = resolve;
    });
    const settled = failure(model.complete(request({ onDelta: () => firstDelta() })));
    await delta;
    await clock.advance(4999);
    expect(server.requests[0]!.clientClosed).toBe(false);
    await clock.advance(1);
    const error = await settled;
    expect(error).toMatchObject({ code: "MODEL_STREAM_INTERRUPTED", retryable: false });
    expect(error.message).toContain("no data from the model server for 5000 ms");
    await server.requests[0]!.closed;
    expect(server.requests).toHaveLength(1);
    never.open();
  });

  it("reports a server that is not listening as MODEL_UNAVAILABLE", async () => {
    const { model, idle } = await setup({ maxRetries: 1 });
    await server.close();
    const settled = failure(model.complete(request()));
    await idle();
    expect(await settled).toMatchObject({ code: "MODEL_UNAVAILABLE", retryable: true });
  });

  it("refuses bad options with a ConfigError naming the field", () => {
    expect(() => createOpenAIModel({ baseURL: "not a url", model: "m" })).toThrow(/openai\.baseURL/);
    expect(() => createOpenAIModel({ baseURL: "http://127.0.0.1:1/v1", model: "" })).toThrow(/openai\.model/);
    expect(() => createOpenAIModel({ baseURL: "http://127.0.0.1:1/v1", model: "m", maxRetries: -1 })).toThrow(
      ConfigError,
    );
    expect(() =>
      createOpenAIModel({ baseURL: "http://127.0.0.1:1/v1", model: "m", max_retries: 3 } as never),
    ).toThrow(/openai\.max_retries: expected no unknown keys/);
  });
});
