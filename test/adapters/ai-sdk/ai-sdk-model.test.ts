import { APICallError, type LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { createAISDKModel } from "../../../src/adapters/ai-sdk/create-ai-sdk-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { ConfigError, ModelError } from "../../../src/errors.js";
import type { ModelRequest } from "../../../src/ports/model.js";

// createAISDKModel against the AI SDK's own mock language model: what reaches doStream (prompt,
// tools, settings, abort signal) and what the gateway gets back (deltas, tool calls, usage, typed errors).

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});
const finish = (unified: "stop" | "tool-calls", input = 12, output = 4): LanguageModelV3StreamPart => ({
  type: "finish",
  finishReason: { unified, raw: unified },
  usage: usage(input, output),
});
const text = (pieces: string[]): LanguageModelV3StreamPart[] => [
  { type: "stream-start", warnings: [] },
  { type: "text-start", id: "t1" },
  ...pieces.map((delta) => ({ type: "text-delta" as const, id: "t1", delta })),
  { type: "text-end", id: "t1" },
  finish("stop"),
];
const streamOf = (parts: LanguageModelV3StreamPart[]) => ({ stream: convertArrayToReadableStream(parts) });

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

const apiError = (statusCode: number, message: string, headers: Record<string, string> = {}) =>
  new APICallError({
    message,
    url: "http://model.test/v1/messages",
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
    isRetryable: statusCode === 429 || statusCode >= 500,
  });

describe("createAISDKModel", () => {
  it("streams deltas, reports finish reason and usage, and sends the instructions first as the system prompt", async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf(text(["Hel", "lo!"])) });
    const model = createAISDKModel({ model: mock, system: "Provider rules." });
    const deltas: string[] = [];
    const reply = await model.complete(
      request({
        instructions: "Gateway rules.",
        temperature: 0.4,
        maxOutputTokens: 100,
        onDelta: (delta) => deltas.push(delta),
      }),
    );
    expect(deltas).toEqual(["Hel", "lo!"]);
    expect(reply).toEqual({
      text: "Hello!",
      toolCalls: [],
      finishReason: "stop",
      usage: { inputTokens: 12, outputTokens: 4, totalTokens: 16 },
    });
    const call = mock.doStreamCalls[0]!;
    expect(call.prompt).toEqual([
      { role: "system", content: "Provider rules.\n\nGateway rules." },
      { role: "user", content: [{ type: "text", text: "hi" }] },
    ]);
    expect(call).toMatchObject({ temperature: 0.4, maxOutputTokens: 100 });
    expect(call.abortSignal).toBeInstanceOf(AbortSignal);
  });

  it("sends tool JSON Schemas, returns tool calls, and maps calls and results (failed ones as errors) back", async () => {
    const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
    const mock = new MockLanguageModelV3({
      doStream: streamOf([
        { type: "stream-start", warnings: [] },
        { type: "tool-input-start", id: "tc_1", toolName: "read_file" },
        { type: "tool-input-delta", id: "tc_1", delta: '{"path":' },
        { type: "tool-input-delta", id: "tc_1", delta: '"notes.md"}' },
        { type: "tool-input-end", id: "tc_1" },
        { type: "tool-call", toolCallId: "tc_1", toolName: "read_file", input: '{"path":"notes.md"}' },
        finish("tool-calls"),
      ]),
    });
    const model = createAISDKModel({ model: mock });
    const reply = await model.complete(
      request({
        tools: [{ name: "read_file", description: "Reads a file.", parameters: schema }],
        context: [
          { role: "user", text: "read both", messageId: "m1" },
          { role: "assistant", text: "Reading." },
          { role: "toolCall", callId: "a", name: "read_file", args: { path: "x" } },
          { role: "toolCall", callId: "b", name: "read_file", args: { path: "y" } },
          { role: "toolResult", callId: "a", status: "done", result: { text: "X" } },
          { role: "toolResult", callId: "b", status: "failed", result: "no such file" },
          { role: "note", text: "[note: a note]" },
        ],
      }),
    );
    expect(reply).toMatchObject({
      toolCalls: [{ callId: "tc_1", name: "read_file", args: { path: "notes.md" } }],
      finishReason: "tool_calls",
    });
    const call = mock.doStreamCalls[0]!;
    expect(call.tools).toEqual([
      { type: "function", name: "read_file", description: "Reads a file.", inputSchema: schema },
    ]);
    expect(call.prompt).toEqual([
      { role: "user", content: [{ type: "text", text: "read both" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Reading." },
          { type: "tool-call", toolCallId: "a", toolName: "read_file", input: { path: "x" } },
          { type: "tool-call", toolCallId: "b", toolName: "read_file", input: { path: "y" } },
        ],
      },
      {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: "a",
            toolName: "read_file",
            output: { type: "text", value: '{"text":"X"}' },
          },
          {
            type: "tool-result",
            toolCallId: "b",
            toolName: "read_file",
            output: { type: "error-text", value: '{"status":"failed","result":"no such file"}' },
          },
        ],
      },
      { role: "user", content: [{ type: "text", text: "[note: a note]" }] },
    ]);
  });

  it("aborts the call at once with the turn's reason, and the model sees its abort signal fire", async () => {
    let seen: AbortSignal | undefined;
    const mock = new MockLanguageModelV3({
      doStream: async (options) => {
        seen = options.abortSignal;
        // A stream that never ends: only the abort can finish the call.
        return { stream: new ReadableStream<LanguageModelV3StreamPart>({ start: () => {} }) };
      },
    });
    const model = createAISDKModel({ model: mock });
    const turn = new AbortController();
    const pending = model.complete(request({ signal: turn.signal }));
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    turn.abort(new Error("/stop"));
    await expect(pending).rejects.toThrow("/stop");
    expect(seen?.aborted).toBe(true);
    expect(model.isBusy).toBe(false);
  });

  it("retries a 429 after its Retry-After on the clock, then streams; fails 401 at once as MODEL_AUTH", async () => {
    const clock = new SimulatedClock();
    let calls = 0;
    const mock = new MockLanguageModelV3({
      doStream: async () => {
        calls++;
        if (calls === 1)
          throw apiError(429, "Number of requests has exceeded your rate limit", { "retry-after": "3" });
        return streamOf(text(["ok"]));
      },
    });
    const model = createAISDKModel({ model: mock, clock });
    const pending = model.complete(request());
    await clock.runUntilIdle({ isBusy: () => model.isBusy });
    expect(clock.now()).toBe(3000);
    expect((await pending).text).toBe("ok");
    expect(calls).toBe(2);

    const denied = createAISDKModel({
      model: new MockLanguageModelV3({
        doStream: async () => Promise.reject(apiError(401, "invalid x-api-key")),
      }),
      clock,
    });
    const error = await failure(denied.complete(request()));
    expect(error).toMatchObject({ code: "MODEL_AUTH", retryable: false, status: 401 });
    expect(error.message).toContain("invalid x-api-key");
  });

  it.each([
    [529, "MODEL_UNAVAILABLE"],
    [503, "MODEL_UNAVAILABLE"],
    [400, "MODEL_BAD_REQUEST"],
  ])("maps status %i to %s", async (status, code) => {
    const model = createAISDKModel({
      model: new MockLanguageModelV3({ doStream: async () => Promise.reject(apiError(status, "nope")) }),
      maxRetries: 0,
    });
    expect(await failure(model.complete(request()))).toMatchObject({
      code,
      retryable: code === "MODEL_UNAVAILABLE",
    });
  });

  it("fails a stream whose error part comes after text as MODEL_STREAM_INTERRUPTED, without a retry", async () => {
    const mock = new MockLanguageModelV3({
      doStream: streamOf([
        { type: "text-delta", id: "t1", delta: "Partly" },
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
      ]),
    });
    const model = createAISDKModel({ model: mock });
    const error = await failure(model.complete(request()));
    expect(error).toMatchObject({ code: "MODEL_STREAM_INTERRUPTED", retryable: false });
    expect(mock.doStreamCalls).toHaveLength(1);
  });

  it("refuses a model that is not a v3 language model, naming the field", () => {
    expect(() => createAISDKModel({ model: {} as never })).toThrow(ConfigError);
    let thrown: unknown;
    try {
      createAISDKModel({ model: { specificationVersion: "v2", doStream: () => {} } as never });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ field: "aisdk.model" });
    expect(() => createAISDKModel({ model: new MockLanguageModelV3(), temperature: 9 })).toThrow(
      /aisdk\.temperature/,
    );
  });
});
