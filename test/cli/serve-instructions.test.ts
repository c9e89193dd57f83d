import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { textStream, useFakeOpenAIServer } from "../support/fake-openai-server.js";
import { postMessage } from "../support/http-gateway.js";
import { runTiller, startServe, useServeProcesses } from "../support/serve-process.js";
import { SseRecorder } from "../support/sse-recorder.js";

// `tiller serve --instructions FILE` and the `model` keys of `--config`, through a real process to the
// OpenAI-compatible fake: what the model server receives, and the refusals a user sees for bad input.

const procs = useServeProcesses("tiller-serve-instructions");
const fakes = useFakeOpenAIServer();

afterEach(() => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  procs.live.clear();
});

describe("tiller serve --instructions", { timeout: 40_000 }, () => {
  it("sends the file's text as the system prompt, with the config's temperature and token limit", async () => {
    const fake = await fakes.start();
    const instructions = join(procs.dir, "instructions.md");
    await writeFile(instructions, "You are the support bot of Acme.\nAnswer briefly.\n");
    const config = join(procs.dir, "model.yaml");
    await writeFile(
      config,
      "model:\n  instructions: overridden by the flag\n  temperature: 0.3\n  maxOutputTokens: 200\n",
    );
    const running = await startServe(procs.command, [
      "--store",
      join(procs.dir, "store"),
      "--config",
      config,
      "--instructions",
      instructions,
      "--model-url",
      fake.url,
      "--model",
      "fake-model",
    ]);
    procs.live.add(running);
    fake.reply({ stream: textStream(["Hello from Acme."]) });
    const deliveries = procs.record(new SseRecorder(`${running.url}/v1/sessions/web%3Ai/deliveries`));
    await deliveries.opened;
    await postMessage(running.url, "web:i", "hello", "i1");
    expect((await deliveries.waitFor((event) => event.event === "delivery")).data.text).toBe(
      "Hello from Acme.",
    );
    const body = fake.requests[0]!.body;
    expect(body.messages).toEqual([
      { role: "system", content: "You are the support bot of Acme.\nAnswer briefly." },
      { role: "user", content: "hello" },
    ]);
    expect(body.temperature).toBe(0.3);
    expect(body.max_tokens).toBe(200);
  });

  it("refuses a missing instructions file and a bad model key of --config, naming them (exit 2)", async () => {
    const missing = runTiller(procs.command, [
      "serve",
      "--port",
      "0",
      "--instructions",
      join(procs.dir, "nope.md"),
    ]);
    expect((await missing.exited).code).toBe(2);
    expect(missing.stderr()).toMatch(/--instructions .*nope\.md: cannot read it/);

    const config = join(procs.dir, "bad.json");
    await writeFile(config, JSON.stringify({ model: { temperature: 5 } }));
    const bad = runTiller(procs.command, ["serve", "--port", "0", "--config", config]);
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toContain("config.model.temperature");
  });
});
