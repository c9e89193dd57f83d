import { afterEach, describe, expect, it } from "vitest";
import { splitText } from "../../src/policy/split-text.js";
import { type FakeOpenAIServer, startFakeOpenAI } from "../../src/testing/fake-openai.js";
import { FakeTelegramApi } from "../support/fake-telegram-api.js";
import { useServeProcesses } from "../support/serve-process.js";
import { serveTelegramWithModel } from "../support/serve-telegram.js";

// A long answer through a real `tiller serve`: the model (a local OpenAI-compatible server) writes
// more than Telegram's 4096 characters, and the answer reaches the fake Bot API in parts.

const procs = useServeProcesses("tiller-serve-telegram-split");
const fakes: Array<FakeTelegramApi | FakeOpenAIServer> = [];
afterEach(async () => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  await Promise.all([...procs.live].map((running) => running.exited));
  procs.live.clear();
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

/** Three paragraphs of about 3,000 characters: Telegram takes them as three messages. */
function longAnswer(topic: string): string {
  return [1, 2, 3]
    .map((n) =>
      `Part ${n} about ${topic}. ${`Sentence ${n} of a long explanation of ${topic}. `.repeat(60)}`.trim(),
    )
    .join("\n\n");
}

const sent = (api: FakeTelegramApi, text: string) =>
  api.calls.filter((call) => call.method === "sendMessage" && call.body.text === text).length;

describe("tiller serve splits a long answer at Telegram's limit", () => {
  it("posts the parts in order, each once", async () => {
    const answer = longAnswer("the harbour");
    const parts = splitText(answer, 4096);
    expect(parts).toHaveLength(3);
    const api = await new FakeTelegramApi().start();
    const model = await startFakeOpenAI({ replies: [{ text: answer, pieces: 5 }] });
    fakes.push(api, model);
    await serveTelegramWithModel(procs, "split", api, model);
    api.userSays(42, "tell me everything about the harbour");
    await api.waitFor(() => api.chat(42).length === 3, 30_000, "three parts");
    expect(api.chat(42).map((message) => message.text)).toEqual(parts);
    for (const part of parts) expect(sent(api, part)).toBe(1);
    // Every part answers the user's message.
    expect(api.chat(42).map((message) => message.reply_to)).toEqual([1, 1, 1]);
    expect(model.requests).toHaveLength(1);
  }, 180_000);

  it("kill -9 mid-split: the restart posts only the part Telegram never got, and says one is unconfirmed", async () => {
    const answer = longAnswer("the lighthouse");
    const parts = splitText(answer, 4096);
    const api = await new FakeTelegramApi().start();
    const model = await startFakeOpenAI({ replies: [{ text: answer, pieces: 5 }] });
    fakes.push(api, model);
    const first = await serveTelegramWithModel(procs, "split-crash", api, model);
    // Part 1 is answered at once; part 2 reaches Telegram, whose answer is held: the process dies
    // with part 2 posted but not confirmed, and part 3 not sent.
    api.hold("sendMessage", 0);
    api.hold("sendMessage", 60_000);
    api.userSays(42, "tell me everything about the lighthouse");
    await api.waitFor(() => api.chat(42).length === 2, 30_000, "two parts reaching Telegram");
    first.proc.kill("SIGKILL");
    await first.exited;
    procs.live.delete(first);

    await serveTelegramWithModel(procs, "split-crash", api, model);
    // Part 2's outcome is unknown (Telegram cannot be asked), so it is not posted again; part 3,
    // which Telegram certainly lacks, is; then the user is told one reply was not confirmed.
    await api.waitFor(() => api.chat(42).length === 4, 30_000, "part 3 and the notice");
    const texts = api.chat(42).map((message) => message.text);
    expect(texts.slice(0, 3)).toEqual(parts);
    for (const part of parts) expect(sent(api, part)).toBe(1);
    expect(texts[3]).toMatch(/did not confirm/);
    // The model is not asked again: the stored final is delivered, never regenerated.
    expect(model.requests).toHaveLength(1);
  }, 180_000);
});
