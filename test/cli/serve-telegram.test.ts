import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeTelegramApi } from "../support/fake-telegram-api.js";
import { runTiller, useServeProcesses, waitForOutput } from "../support/serve-process.js";
import { SseRecorder } from "../support/sse-recorder.js";

// `tiller serve` in front of a Telegram bot, end to end: a real server process whose grammY client
// long-polls and posts to a local Bot API over real sockets, as it would api.telegram.org.

const procs = useServeProcesses("tiller-serve-telegram");
const fakes: FakeTelegramApi[] = [];
afterEach(async () => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  await Promise.all([...procs.live].map((running) => running.exited));
  procs.live.clear();
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

async function serveTelegram(
  store: string,
  delivery: Record<string, unknown> = {},
  taskMs = 1500,
  telegram: Record<string, unknown> = {},
) {
  const api = fakes[0] ?? (await new FakeTelegramApi().start());
  if (!fakes.includes(api)) fakes.push(api);
  const config = join(procs.dir, `${store}.json`);
  await writeFile(
    config,
    JSON.stringify({ channels: { telegram: { apiRoot: api.url, ...telegram } }, delivery }),
  );
  const proc = runTiller(
    procs.command,
    ["serve", "--port", "0", "--store", join(procs.dir, store), "--config", config],
    {
      TELEGRAM_BOT_TOKEN: api.token,
      TILLER_DEMO_TASK_MS: String(taskMs),
    },
  );
  procs.live.add(proc);
  // A loaded machine can take a while to start a process.
  const [, url] = await waitForOutput(proc, proc.stdout, /listening on (http:\/\/\S+)/, 90_000);
  const running = { ...proc, url: url! };
  return { api, running, events: procs.record(new SseRecorder(`${running.url}/v1/events`)) };
}

async function currentTool(url: string, session: string): Promise<string | undefined> {
  const res = await fetch(`${url}/v1/sessions/${encodeURIComponent(session)}`);
  if (res.status !== 200) return undefined;
  const body = (await res.json()) as { run: { currentTool?: string } | null };
  return body.run?.currentTool;
}

describe("tiller serve with channels.telegram", () => {
  it("takes an update, steers a message in while the tool runs, and posts one answer", async () => {
    // The task outlasts the poll that brings the second message in, on a loaded machine too.
    const { api, running } = await serveTelegram("steer", {}, 6000);
    expect(running.stdout()).toContain("channel: telegram (long polling)");
    api.userSays(42, "please run a task", { from: { id: 42, first_name: "Ada" } });
    const deadline = Date.now() + 15_000;
    while ((await currentTool(running.url, "telegram:42")) !== "demo_task") {
      if (Date.now() > deadline) throw new Error("the demo tool never started");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    api.userSays(42, "and the blue one too");
    await api.waitFor(() => api.chat(42).length > 0, 40_000, "the answer");
    const [answer] = api.chat(42);
    expect(answer!.text).toContain("demo_task finished");
    expect(answer!.text).toContain('While it ran you wrote: "and the blue one too"');
    // The answer replies to a message of the turn it answers (the first, or the one steered in).
    expect([1, 2]).toContain(answer!.reply_to);
  }, 180_000);

  it("answers an edited message as the corrected text, under its own id", async () => {
    const { api, running, events } = await serveTelegram("edit");
    const first = api.userSays(42, "what is the capital of Frnace");
    await api.waitFor(() => api.chat(42).length === 1, 20_000, "the first answer");
    api.userEdits(42, first.message!.message_id, "what is the capital of France");
    await api.waitFor(() => api.chat(42).length === 2, 20_000, "the answer to the edit");
    expect(api.chat(42)[1]!.text).toContain("capital of France");
    const acks = events.of("message.acked").map((event) => event.data.messageId);
    expect(acks).toEqual(["1", expect.stringMatching(/^1:edit:/)]);
    const transcript = (await (
      await fetch(`${running.url}/v1/sessions/${encodeURIComponent("telegram:42")}/transcript`)
    ).json()) as { records: Array<{ role: string; text?: string }> };
    expect(transcript.records.filter((r) => r.role === "user").map((r) => r.text)).toEqual([
      "what is the capital of Frnace",
      "what is the capital of France",
    ]);
  }, 180_000);

  it("waits out a 429's retry_after and posts the reply once", async () => {
    const { api, events } = await serveTelegram("rate");
    api.fail("sendMessage", {
      status: 429,
      description: "Too Many Requests: retry after 1",
      parameters: { retry_after: 1 },
    });
    api.userSays(42, "hello");
    await api.waitFor(() => api.chat(42).length === 1, 20_000, "the reply after the 429");
    // The refused send is tried once more after retry_after, under the same delivery id.
    await events.waitFor((event) => event.event === "final.delivered", 30_000);
    const sends = api.calls.filter((call) => call.method === "sendMessage");
    expect(sends).toHaveLength(2);
    expect(api.chat(42)).toHaveLength(1);
  }, 180_000);

  it("a send slower than delivery.sendTimeoutMs is posted once, not resent", async () => {
    const { api, events } = await serveTelegram("slow", { sendTimeoutMs: 1000 });
    api.hold("sendMessage", 2500);
    api.userSays(42, "hello");
    await api.waitFor(() => api.chat(42).length === 1, 20_000, "the slow reply");
    // The timeout aborted the wait, not the post: the late receipt counts, and nothing is resent.
    await events.waitFor((event) => event.event === "final.delivered", 30_000);
    const reply = api.chat(42)[0]!.text;
    expect(reply).toContain('You said: "hello"');
    expect(
      api.calls.filter((call) => call.method === "sendMessage" && call.body.text === reply),
    ).toHaveLength(1);
  }, 180_000);

  it("kill -9 while Telegram holds the answer: the restart does not post it again", async () => {
    const first = await serveTelegram("crash");
    const { api } = first;
    api.hold("sendMessage", 60_000);
    api.userSays(42, "hello");
    await api.waitFor(() => api.chat(42).length === 1, 20_000, "the answer reaching Telegram");
    first.running.proc.kill("SIGKILL");
    await first.running.exited;
    await serveTelegram("crash"); // the restart, on the same fake Telegram
    // The restart finds the intent without a receipt; the channel's ledger knows the send began and
    // Telegram cannot be asked, so the reply is not posted again: the user is told it is unconfirmed.
    await api.waitFor(() => api.chat(42).length >= 2, 30_000, "the restart's notice");
    expect(api.chat(42)[1]!.text).toMatch(/confirm/i);
    const reply = api.chat(42)[0]!.text;
    expect(reply).toContain('You said: "hello"');
    expect(
      api.calls.filter((call) => call.method === "sendMessage" && call.body.text === reply),
    ).toHaveLength(1);
  }, 180_000);

  it("webhook mode: registers the webhook, takes updates with the secret, refuses them without", async () => {
    const { api, running } = await serveTelegram("webhook", {}, 1500, {
      mode: "webhook",
      webhookUrl: "https://bot.example.test/telegram",
      webhookSecret: "s3cret",
    });
    expect(running.stdout()).toContain("telegram (webhook at POST /telegram, secret checked)");
    expect(api.webhookUrl).toBe("https://bot.example.test/telegram");
    expect(api.calls.find((call) => call.method === "setWebhook")?.body.secret_token).toBe("s3cret");
    const update = {
      update_id: 1,
      message: {
        message_id: 5,
        date: 0,
        chat: { id: 77, type: "private" },
        from: { id: 77, is_bot: false, first_name: "Ada" },
        text: "hello hook",
      },
    };
    const post = (secret?: string) =>
      fetch(`${running.url}/telegram`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(secret ? { "x-telegram-bot-api-secret-token": secret } : {}),
        },
        body: JSON.stringify(update),
      });
    expect((await post()).status).toBe(401);
    expect((await post("wrong")).status).toBe(401);
    expect((await post("s3cret")).status).toBe(200);
    await api.waitFor(() => api.chat(77).length === 1, 30_000, "the answer");
    expect(api.chat(77)[0]!.text).toContain('You said: "hello hook"');
    expect(api.calls.some((call) => call.method === "getUpdates")).toBe(false);
  }, 180_000);
});
