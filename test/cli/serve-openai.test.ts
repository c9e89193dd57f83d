import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  chunk,
  type FakeOpenAIServer,
  gate,
  textStream,
  toolCallStream,
  useFakeOpenAIServer,
} from "../support/fake-openai-server.js";
import { postMessage } from "../support/http-gateway.js";
import { startServe, useServeProcesses } from "../support/serve-process.js";
import { SseRecorder } from "../support/sse-recorder.js";

// `tiller serve --model-url` end to end: a real server process talking to the OpenAI-compatible fake
// over real sockets, a client posting messages over HTTP.

const procs = useServeProcesses("tiller-serve-openai");
const fakes = useFakeOpenAIServer();
let fake: FakeOpenAIServer;

// The lookup runs until the test creates its release file, so a steer always meets it running.
const tools = (release: string) => `import { existsSync } from "node:fs";
export default [{
  name: "slow_lookup",
  description: "Looks something up, slowly",
  parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  cancellable: false,
  async execute(args) {
    while (!existsSync(${JSON.stringify(release)})) await new Promise((resolve) => setTimeout(resolve, 20));
    return "found: " + args.query;
  },
}];
`;
const release = () => join(procs.dir, "lookup-release");

beforeAll(() => writeFile(join(procs.dir, "tools.mjs"), tools(release())));
// Each test's server process ends with the test (its fake model server goes with it).
afterEach(() => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  procs.live.clear();
});

async function serveWithFake(store: string) {
  fake = await fakes.start();
  const running = await startServe(
    procs.command,
    [
      "--store",
      join(procs.dir, store),
      "--model-url",
      fake.url,
      "--model",
      "fake-model",
      "--tools",
      join(procs.dir, "tools.mjs"),
    ],
    { TILLER_MODEL_KEY: "key-123", OPENAI_API_KEY: "not-this-one" },
  );
  procs.live.add(running);
  return running;
}

function follow(url: string) {
  return procs.record(new SseRecorder(url));
}

async function post(url: string, session: string, text: string, id: string) {
  return (await postMessage(url, session, text, id)).body;
}

describe("tiller serve with an OpenAI-compatible model", { timeout: 90_000 }, () => {
  it("streams the model's reply to the client; the key, model name and tool schemas reach the server", async () => {
    const running = await serveWithFake("plain");
    expect(running.stdout()).toContain("fake-model");
    expect(running.stdout()).not.toContain("DEMO");
    fake.reply({ stream: textStream(["Hel", "lo from ", "the model"]) });
    const deliveries = follow(`${running.url}/v1/sessions/web%3Ao/deliveries`);
    const events = follow(`${running.url}/v1/events?session=web%3Ao`);
    await Promise.all([deliveries.opened, events.opened]);
    expect((await post(running.url, "web:o", "hello", "o1")).ack.disposition).toBe("started");
    const reply = await deliveries.waitFor((event) => event.event === "delivery");
    expect(reply.data.text).toBe("Hello from the model");
    expect(events.of("model.delta").map((event) => event.data.text)).toEqual([
      "Hel",
      "lo from ",
      "the model",
    ]);
    const request = fake.requests[0]!;
    expect(request.headers.authorization).toBe("Bearer key-123");
    expect(request.body.model).toBe("fake-model");
    expect(request.body.stream).toBe(true);
    expect(request.body.messages.at(-1)).toMatchObject({ role: "user", content: "hello" });
    const tool = request.body.tools.find(
      (entry: { function: { name: string } }) => entry.function.name === "slow_lookup",
    );
    expect(tool.function.parameters.required).toEqual(["query"]);
  });

  it("a steer while the model's tool runs reaches the model's next call, after the tool result", async () => {
    const running = await serveWithFake("steer");
    fake.reply(
      { stream: toolCallStream([{ id: "call_1", name: "slow_lookup", args: { query: "flights" } }]) },
      { stream: textStream(["Flights found; and yes, window seats."]) },
    );
    const deliveries = follow(`${running.url}/v1/sessions/web%3As/deliveries`);
    const events = follow(`${running.url}/v1/events?session=web%3As`);
    await Promise.all([deliveries.opened, events.opened]);
    await post(running.url, "web:s", "find flights", "s1");
    await events.waitFor((event) => event.event === "tool.started");
    const steer = await post(running.url, "web:s", "window seats please", "s2");
    expect(steer.ack).toMatchObject({ disposition: "steered", waitsFor: "tool-to-finish" });
    await writeFile(release(), "");
    const reply = await deliveries.waitFor((event) => event.event === "delivery");
    expect(reply.data.text).toBe("Flights found; and yes, window seats.");
    const messages = fake.requests[1]!.body.messages as Array<{ role: string; content: unknown }>;
    const toolAt = messages.findIndex((message) => message.role === "tool");
    const steerAt = messages.findIndex((message) => message.content === "window seats please");
    expect(toolAt).toBeGreaterThan(0);
    expect(steerAt).toBeGreaterThan(toolAt);
  });

  it("/stop closes the model's stream at once and nothing is delivered", async () => {
    const running = await serveWithFake("stop");
    const hold = gate();
    fake.reply({ stream: [chunk({ role: "assistant", content: "Once upon" }), { pause: hold.promise }] });
    const deliveries = follow(`${running.url}/v1/sessions/web%3Ax/deliveries`);
    const events = follow(`${running.url}/v1/events?session=web%3Ax`);
    await Promise.all([deliveries.opened, events.opened]);
    await post(running.url, "web:x", "tell me a story", "x1");
    await events.waitFor((event) => event.event === "model.delta");
    expect((await post(running.url, "web:x", "/stop", "x2")).ack.disposition).toBe("control");
    const request = fake.requests[0]!;
    await request.closed;
    expect(request.clientClosed).toBe(true);
    const ended = await events.waitFor((event) => event.event === "turn.ended");
    expect(ended.data.status).toBe("aborted");
    hold.open();
    expect(deliveries.of("delivery")).toEqual([]);
  });
});
