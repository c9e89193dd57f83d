import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { createOpenAIModel } from "../../../src/adapters/openai/create-openai-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../../src/events.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { silentLogger } from "../../../src/logger.js";
import type { ToolDefinition } from "../../../src/ports/tool.js";
import {
  type FakeReply,
  play,
  textStream,
  toolCallStream,
  useFakeOpenAIServer,
} from "../../support/fake-openai-server.js";

// Some OpenAI-compatible servers number tool calls per reply, so every call is `call_1`. A model that
// looks up what its context has no result for yet, as a real one does: if a repeated id hid a call or
// its result, it would ask again and again until the turn hit its model-call limit.

const fake = useFakeOpenAIServer();
const CITIES = ["Paris", "Oslo", "Rome"];

type Message = {
  role: string;
  content?: string | null;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string }>;
};

/** Answers from what the request's context holds: the first two lookups in parallel, then one by one. */
const lookingModel: FakeReply = (res, request) => {
  const messages = request.body.messages as Message[];
  const results = messages
    .filter((message) => message.role === "tool")
    .map((message) => message.content ?? "");
  const missing = CITIES.filter((city) => !results.some((result) => result.includes(city)));
  if (missing.length === 0)
    return play({ stream: textStream([`Weather: ${results.join("; ")}`]) }, res, request);
  const asked = results.length === 0 ? missing.slice(0, 2) : missing.slice(0, 1);
  const calls = asked.map((city) => ({ id: "call_1", name: "weather", args: { city } }));
  return play({ stream: toolCallStream(calls) }, res, request);
};

describe("a server that repeats tool-call ids", () => {
  it("runs each lookup once, shows every call and its result to the next call, and ends the turn normally", async () => {
    const server = await fake.start(Array.from({ length: 30 }, () => lookingModel));
    const clock = new SimulatedClock();
    const model = createOpenAIModel({ baseURL: server.url, model: "fake-model", clock, maxRetries: 0 });
    const channel = new LoopbackChannel({ now: () => clock.now() });
    const ran: string[] = [];
    const weather: ToolDefinition = {
      name: "weather",
      description: "The weather in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      cancellable: false,
      async execute(args) {
        ran.push(String(args.city));
        return `${String(args.city)}: sunny`;
      },
    };
    const gateway = createGateway({
      model,
      tools: [weather],
      channels: { web: channel },
      clock,
      logger: silentLogger,
    });
    const events: TillerEvent[] = [];
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    await gateway.receive({
      session: "web:1",
      channel: "web",
      id: "m1",
      text: "weather in Paris, Oslo, Rome?",
    });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy || model.isBusy });

    expect(ran).toEqual(["Paris", "Oslo", "Rome"]);
    expect(server.requests).toHaveLength(3);
    expect(channel.sent.map((sent) => sent.text)).toEqual([
      "Weather: Paris: sunny; Oslo: sunny; Rome: sunny",
    ]);
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({ status: "done" });
    // The last call sees three distinct calls, each followed by its own result.
    const last = server.requests[2]!.body.messages as Message[];
    const callIds = last.flatMap((message) => message.tool_calls?.map((call) => call.id) ?? []);
    expect(callIds).toEqual(["call_1", "call_1-2", "call_1-3"]);
    expect(last.filter((message) => message.role === "tool").map((message) => message.tool_call_id)).toEqual(
      callIds,
    );

    await gateway.stop();
  });
});
