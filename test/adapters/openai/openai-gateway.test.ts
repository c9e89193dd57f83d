import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { createOpenAIModel } from "../../../src/adapters/openai/create-openai-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../../src/events.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { silentLogger } from "../../../src/logger.js";
import type { ToolDefinition } from "../../../src/ports/tool.js";
import {
  chunk,
  type FakeOpenAIServer,
  gate,
  textStream,
  toolCallStream,
  useFakeOpenAIServer,
} from "../../support/fake-openai-server.js";

// The gateway with the OpenAI-compatible provider, end to end over a real socket: what the server
// receives (tool schemas, tool calls and results), what the user gets, and what happens when the
// server is down or the user stops the reply.

const fake = useFakeOpenAIServer();
let server: FakeOpenAIServer;

const readFileSchema = {
  type: "object",
  properties: { path: { type: "string" } },
  required: ["path"],
  additionalProperties: false,
};

async function setup(tools: ToolDefinition[] = []) {
  server = await fake.start();
  const clock = new SimulatedClock();
  const model = createOpenAIModel({ baseURL: server.url, model: "fake-model", clock, random: () => 0.5 });
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({ model, tools, channels: { web: channel }, clock, logger: silentLogger });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy || model.isBusy });
  const say = (id: string, text: string) => gateway.receive({ session: "web:1", channel: "web", id, text });
  await gateway.start();
  return { clock, model, channel, gateway, events, idle, say };
}

function readFile(executed: unknown[]): ToolDefinition {
  return {
    name: "read_file",
    description: "Read a text file of the workspace.",
    parameters: readFileSchema,
    readOnly: true,
    cancellable: true,
    async execute(args) {
      executed.push(args);
      return { text: "hello from notes" };
    },
  };
}

describe("gateway + createOpenAIModel", () => {
  it("does a tool call round trip: the schema reaches the server, the result goes back with its call id", async () => {
    const executed: unknown[] = [];
    const { channel, events, idle, say, gateway } = await setup([readFile(executed)]);
    server.reply(
      { stream: toolCallStream([{ id: "call_1", name: "read_file", args: { path: "notes.md" } }]) },
      { stream: textStream(["The notes say: ", "hello."], { usage: [40, 6] }) },
    );
    await say("m1", "what do my notes say?");
    await idle();

    expect(executed).toEqual([{ path: "notes.md" }]);
    expect(channel.sent.map((sent) => sent.text)).toEqual(["The notes say: hello."]);
    const [first, second] = server.requests;
    const tools = first!.body.tools as Array<{ function: { name: string; parameters: unknown } }>;
    expect(tools.map((tool) => tool.function.name)).toEqual(["message", "commitment", "read_file"]);
    expect(tools[2]).toEqual({
      type: "function",
      function: {
        name: "read_file",
        description: "Read a text file of the workspace.",
        parameters: readFileSchema,
      },
    });
    expect(second!.body.messages).toEqual([
      { role: "user", content: "what do my notes say?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "read_file", arguments: '{"path":"notes.md"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: '{"text":"hello from notes"}' },
    ]);
    const ended = events.filter((event) => event.type === "model.ended");
    expect(ended).toMatchObject([
      { call: 1, status: "done", finishReason: "tool_calls", toolCalls: 1, usage: { totalTokens: 30 } },
      {
        call: 2,
        status: "done",
        finishReason: "stop",
        usage: { inputTokens: 40, outputTokens: 6, totalTokens: 46 },
      },
    ]);
    const deltas = events.flatMap((event) =>
      event.type === "model.delta" && event.call === 2 ? [event] : [],
    );
    expect(deltas.map((delta) => delta.text)).toEqual(["The notes say: ", "hello."]);
    await gateway.stop();
  });

  it("shows the model which argument was wrong, and runs the tool once it sends the right one", async () => {
    const executed: unknown[] = [];
    const { channel, idle, say, gateway } = await setup([readFile(executed)]);
    server.reply(
      { stream: toolCallStream([{ id: "call_1", name: "read_file", args: { file: "notes.md" } }]) },
      { stream: toolCallStream([{ id: "call_2", name: "read_file", args: { path: "notes.md" } }]) },
      { stream: textStream(["hello from notes"]) },
    );
    await say("m1", "read my notes");
    await idle();

    expect(executed).toEqual([{ path: "notes.md" }]);
    const sentBack = server.requests[1]!.body.messages.find(
      (message: { role: string; tool_call_id?: string }) => message.tool_call_id === "call_1",
    );
    expect(sentBack.content).toContain("args.path: is required");
    expect(sentBack.content).toContain("args.file: is not a known argument");
    expect(channel.sent.map((sent) => sent.text)).toEqual(["hello from notes"]);
    await gateway.stop();
  });

  it("gives the user one clear notice when the model server stays down", async () => {
    const { channel, events, idle, say, gateway } = await setup();
    const down = { status: 503, body: { error: { message: "the server is overloaded" } } };
    server.reply(down, down, down);
    await say("m1", "hello?");
    await idle();

    expect(server.requests).toHaveLength(3); // the call and its two retries
    expect(channel.sent.map((sent) => [sent.kind, sent.text])).toEqual([
      [
        "notice",
        "I could not reach the language model, so I could not answer. Please try again in a little while.",
      ],
    ]);
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      status: "failed",
      error: { code: "MODEL_UNAVAILABLE", retryable: true },
    });
    expect(events.find((event) => event.type === "model.ended")).toMatchObject({
      status: "failed",
      error: { code: "MODEL_UNAVAILABLE" },
    });
    await gateway.stop();
  });

  it("/stop closes the model's HTTP stream at once", async () => {
    const { events, say, gateway, channel } = await setup();
    const never = gate();
    server.reply({
      stream: [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Let me think" }),
        { pause: never.promise },
      ],
    });
    const firstDelta = new Promise<void>((resolve) =>
      gateway.subscribe((event) => {
        if (event.type === "model.delta") resolve();
      }),
    );
    await say("m1", "write me an essay");
    await firstDelta;
    await say("m2", "/stop");
    const sent = server.requests[0]!;
    await sent.closed;
    expect(sent.clientClosed).toBe(true);
    expect(events.find((event) => event.type === "model.ended")).toMatchObject({ status: "aborted" });
    expect(channel.sent.filter((message) => message.kind === "reply")).toEqual([]);
    never.open();
    await gateway.stop();
  });
});
