import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { anthropicText, anthropicToolUse, useFakeAnthropicServer } from "../support/fake-anthropic-server.js";
import { postMessage } from "../support/http-gateway.js";
import { runTiller, startServe, useServeProcesses } from "../support/serve-process.js";
import { SseRecorder } from "../support/sse-recorder.js";

// `tiller serve --provider anthropic` end to end: a real server process talking to the Messages API
// fake over real sockets, a client posting messages over HTTP and reading the deliveries stream.

const procs = useServeProcesses("tiller-serve-anthropic");
const fakes = useFakeAnthropicServer();

const TOOLS = `export default [{
  name: "weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  cancellable: false,
  async execute(args) { return { city: args.city, sky: "sunny" }; },
}];
`;

afterEach(() => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  procs.live.clear();
});

describe("tiller serve --provider anthropic", { timeout: 40_000 }, () => {
  it("answers through the Messages API: instructions as system, a tool round trip, the key from ANTHROPIC_API_KEY", async () => {
    const fake = await fakes.start([
      { stream: anthropicToolUse([{ id: "toolu_01", name: "weather", input: { city: "Oslo" } }]) },
      { stream: anthropicText(["Oslo ", "is sunny."]) },
    ]);
    await writeFile(join(procs.dir, "tools.mjs"), TOOLS);
    await writeFile(join(procs.dir, "instructions.txt"), "You report the weather.");
    const running = await startServe(
      procs.command,
      [
        "--store",
        join(procs.dir, "store"),
        "--provider",
        "anthropic",
        "--model-url",
        fake.url,
        "--model",
        "claude-fake",
        "--tools",
        join(procs.dir, "tools.mjs"),
        "--instructions",
        join(procs.dir, "instructions.txt"),
      ],
      { ANTHROPIC_API_KEY: "sk-ant-from-env", TILLER_MODEL_KEY: "", OPENAI_API_KEY: "not-this-one" },
    );
    procs.live.add(running);
    expect(running.stdout()).toContain("claude-fake on Anthropic's Messages API");
    expect(running.stdout()).not.toContain("DEMO");
    const deliveries = procs.record(new SseRecorder(`${running.url}/v1/sessions/web%3Aa/deliveries`));
    const events = procs.record(new SseRecorder(`${running.url}/v1/events?session=web%3Aa`));
    await Promise.all([deliveries.opened, events.opened]);
    expect((await postMessage(running.url, "web:a", "weather in Oslo?", "a1")).body.ack.disposition).toBe(
      "started",
    );
    const reply = await deliveries.waitFor((event) => event.event === "delivery");
    expect(reply.data.text).toBe("Oslo is sunny.");

    expect(fake.requests).toHaveLength(2);
    const [first, second] = fake.requests;
    expect(first!.path).toBe("/v1/messages");
    expect(first!.headers["x-api-key"]).toBe("sk-ant-from-env");
    expect(first!.body).toMatchObject({
      model: "claude-fake",
      stream: true,
      system: [{ type: "text", text: "You report the weather." }],
    });
    expect(first!.body.tools.map((tool: { name: string }) => tool.name)).toContain("weather");
    expect(second!.body.messages.at(-1)).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_01", content: '{"city":"Oslo","sky":"sunny"}' }],
    });
    const ended = await events.waitFor((event) => event.event === "turn.ended");
    expect(ended.data).toMatchObject({ status: "done", usage: { inputTokens: 55, outputTokens: 22 } });
  });

  it("refuses to start without a key or a model name, and an unknown provider (exit 2)", async () => {
    const noKey = runTiller(
      procs.command,
      ["serve", "--port", "0", "--provider", "anthropic", "--model", "m"],
      {
        ANTHROPIC_API_KEY: "",
        TILLER_MODEL_KEY: "",
      },
    );
    expect((await noKey.exited).code).toBe(2);
    expect(noKey.stderr()).toContain("set ANTHROPIC_API_KEY");
    const noModel = runTiller(procs.command, ["serve", "--port", "0", "--provider", "anthropic"], {
      ANTHROPIC_API_KEY: "k",
      TILLER_MODEL: "",
    });
    expect((await noModel.exited).code).toBe(2);
    expect(noModel.stderr()).toContain("--model: required with --provider anthropic");
    const unknown = runTiller(procs.command, ["serve", "--port", "0", "--provider", "gemini"]);
    expect((await unknown.exited).code).toBe(2);
    expect(unknown.stderr()).toContain("--provider: expected one of openai, anthropic, received gemini");
  });
});
