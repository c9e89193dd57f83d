import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FakeOpenAIServer } from "../../src/testing/fake-openai.js";
import type { FakeTelegramApi } from "./fake-telegram-api.js";
import { runTiller, type useServeProcesses, waitForOutput } from "./serve-process.js";

/**
 * Starts `tiller serve` on `store` in front of the fake Telegram `api`, answering with the model of
 * the fake OpenAI `server` (`--model-url`), so a test scripts exactly what the model writes.
 */
export async function serveTelegramWithModel(
  procs: ReturnType<typeof useServeProcesses>,
  store: string,
  api: FakeTelegramApi,
  server: FakeOpenAIServer,
  config: Record<string, unknown> = {},
) {
  const file = join(procs.dir, `${store}.json`);
  await writeFile(file, JSON.stringify({ ...config, channels: { telegram: { apiRoot: api.url } } }));
  const proc = runTiller(
    procs.command,
    [
      "serve",
      "--port",
      "0",
      "--store",
      join(procs.dir, store),
      "--config",
      file,
      "--model-url",
      server.url,
      "--model",
      "fake-model",
    ],
    { TELEGRAM_BOT_TOKEN: api.token, TILLER_MODEL_KEY: "test-key" },
  );
  procs.live.add(proc);
  // A loaded machine can take a while to start a process.
  const [, url] = await waitForOutput(proc, proc.stdout, /listening on (http:\/\/\S+)/, 90_000);
  return { ...proc, url: url! };
}
