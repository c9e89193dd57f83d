import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { createOpenAIModel } from "../../src/adapters/openai/create-openai-model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { createTestGateway } from "../../src/testing/create-test-gateway.js";
import { type FakeOpenAIServer, startFakeOpenAI } from "../../src/testing/fake-openai.js";

// The shipped fake server, proven with OpenAI's own client library, then with createOpenAIModel driving
// a test gateway end to end.

let server: FakeOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(url: string): OpenAI {
  return new OpenAI({ baseURL: url, apiKey: "test", maxRetries: 0 });
}

describe("startFakeOpenAI with the openai client", () => {
  it("streams a scripted text reply in chat.completion.chunk events", async () => {
    server = await startFakeOpenAI({ replies: [{ text: "Hello there", pieces: 3 }] });
    const stream = await client(server.url).chat.completions.create({
      model: "fake-model",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    const pieces: string[] = [];
    let finish: string | null = null;
    for await (const part of stream) {
      expect(part.object).toBe("chat.completion.chunk");
      pieces.push(part.choices[0]?.delta.content ?? "");
      finish = part.choices[0]?.finish_reason ?? finish;
    }
    expect(pieces.join("")).toBe("Hello there");
    expect(pieces.filter(Boolean).length).toBe(3);
    expect(finish).toBe("stop");
    expect(server.requests[0]!.body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("answers a request without stream as one completion, tool calls included", async () => {
    server = await startFakeOpenAI({
      replies: [{ toolCalls: [{ id: "call_1", name: "lookup", args: { order: "A-1" } }] }],
    });
    const completion = await client(server.url).chat.completions.create({
      model: "fake-model",
      messages: [{ role: "user", content: "where is A-1?" }],
    });
    const call = completion.choices[0]!.message.tool_calls![0]!;
    expect(call.type === "function" && call.function).toEqual({
      name: "lookup",
      arguments: '{"order":"A-1"}',
    });
    expect(completion.choices[0]!.finish_reason).toBe("tool_calls");
  });

  it("streams tool calls the client library reassembles", async () => {
    server = await startFakeOpenAI({
      replies: [{ toolCalls: [{ id: "call_1", name: "lookup", args: { order: "A-1234" } }] }],
    });
    const stream = client(server.url).chat.completions.stream({
      model: "fake-model",
      messages: [{ role: "user", content: "where?" }],
    });
    const final = await stream.finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0]!;
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toEqual({ order: "A-1234" });
  });

  it("fails with 429 and 500 as OpenAI does, and says when nothing is scripted", async () => {
    server = await startFakeOpenAI({
      replies: [{ status: 429, headers: { "retry-after": "2" } }, { status: 500 }],
    });
    const ask = () =>
      client(server!.url).chat.completions.create({
        model: "fake-model",
        messages: [{ role: "user", content: "x" }],
      });
    await expect(ask()).rejects.toMatchObject({ status: 429, code: "rate_limit_exceeded" });
    await expect(ask()).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(ask()).rejects.toThrow(/no reply scripted for request 3/);
  });
});

describe("createOpenAIModel against startFakeOpenAI, through a test gateway", () => {
  it("calls the author's tool the fake model asks for and delivers the final reply", async () => {
    server = await startFakeOpenAI({
      replies: [
        { toolCalls: [{ id: "call_1", name: "lookup_order", args: { order: "A-1234" } }] },
        { text: "Order A-1234 has shipped." },
      ],
    });
    const looked: unknown[] = [];
    const lookup: ToolDefinition = {
      name: "lookup_order",
      parameters: { type: "object", properties: { order: { type: "string" } }, required: ["order"] },
      cancellable: true,
      execute: async (args) => {
        looked.push(args);
        return "shipped";
      },
    };
    const url = server.url;
    const t = await createTestGateway({
      model: (clock) => createOpenAIModel({ baseURL: url, model: "fake-model", clock }),
      tools: [lookup],
    });
    await t.receive({ session: "test:1", text: "where is my order?" });
    await t.settle();
    expect(looked).toEqual([{ order: "A-1234" }]);
    expect(t.deliveries.map((delivery) => delivery.text)).toEqual(["Order A-1234 has shipped."]);
    const second = server.requests[1]!.body;
    expect(second.tools.map((tool: { function: { name: string } }) => tool.function.name)).toContain(
      "lookup_order",
    );
    expect(second.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_1" });
    await t.stop();
  });
});
