import { afterEach, describe, expect, it } from "vitest";
import { DISCARDED_PREVIEW_TEXT } from "../../src/ports/channel.js";
import { chunk, type FakeOpenAIServer, gate, startFakeOpenAI } from "../../src/testing/fake-openai.js";
import { FakeTelegramApi } from "../support/fake-telegram-api.js";
import { useServeProcesses } from "../support/serve-process.js";
import { serveTelegramWithModel } from "../support/serve-telegram.js";

// Streaming previews across kill -9: a draft shown by editing must never stand after a crash looking
// like the answer. The channel's send ledger keeps the preview's message id; the restart edits it.

const procs = useServeProcesses("tiller-serve-telegram-preview");
const fakes: Array<FakeTelegramApi | FakeOpenAIServer> = [];
const stuck = gate();
const shown = gate();
afterEach(async () => {
  for (const running of procs.live) running.proc.kill("SIGKILL");
  await Promise.all([...procs.live].map((running) => running.exited));
  procs.live.clear();
  stuck.open();
  shown.open();
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

const config = { delivery: { streaming: { mode: "edit", minIntervalMs: 100 } } };
const DRAFT = "The bridge opens at seven, I think";
const MORE = ", or maybe at eight";
const FINAL = "The bridge opens at nine on weekdays.";

/** Resolves once the session's transcript holds `text` as a delivered answer (its receipt is durable). */
async function storedAsDelivered(url: string, text: string): Promise<void> {
  const transcript = `${url}/v1/sessions/${encodeURIComponent("telegram:42")}/transcript`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { records } = (await (await fetch(transcript)).json()) as {
      records: Array<{ role: string; text?: string; delivered?: boolean }>;
    };
    if (records.some((r) => r.role === "assistant" && r.text === text && r.delivered === true)) return;
    if (Date.now() > deadline) throw new Error(`"${text}" was never stored as delivered`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("tiller serve: a preview cut off by kill -9", () => {
  it("is edited to the discarded text at restart, the answer comes in its own message, and a later restart leaves it alone", async () => {
    const api = await new FakeTelegramApi().start();
    const model = await startFakeOpenAI({
      replies: [
        // The first call streams a draft, then stalls: the process dies with the draft on screen.
        {
          // The second piece waits until the preview is on screen: its edit shows the preview's send
          // came back (and is in the ledger) before the process dies.
          stream: [
            chunk({ role: "assistant", content: "" }),
            chunk({ content: DRAFT }),
            { pause: shown.promise },
            chunk({ content: MORE }),
            { pause: stuck.promise },
          ],
        },
        { text: FINAL, pieces: 3 },
      ],
    });
    fakes.push(api, model);
    const first = await serveTelegramWithModel(procs, "preview", api, model, config);
    api.userSays(42, "when does the bridge open?");
    await api.waitFor(() => api.chat(42).length === 1, 30_000, "the preview");
    expect(api.chat(42)[0]!.text).toBe(DRAFT);
    shown.open();
    await api.waitFor(() => api.chat(42)[0]!.text === DRAFT + MORE, 30_000, "the preview's edit");
    first.proc.kill("SIGKILL");
    await first.exited;
    procs.live.delete(first);

    const second = await serveTelegramWithModel(procs, "preview", api, model, config);
    await api.waitFor(
      () => api.chat(42)[0]!.text === DISCARDED_PREVIEW_TEXT && api.chat(42)[1]?.text === FINAL,
      30_000,
      "the stale preview discarded and the answer",
    );
    expect(api.chat(42)).toHaveLength(2);
    expect(api.chat(42)[0]!.edits).toEqual([DRAFT, DRAFT + MORE]);
    expect(model.requests).toHaveLength(2);

    // The answer replaced the re-run's own preview by an edit; the ledger knows that edit delivered
    // it, so another crash and restart (once the delivery is recorded) neither posts it again nor
    // discards it.
    await storedAsDelivered(second.url, FINAL);
    const calls = api.calls.length;
    second.proc.kill("SIGKILL");
    await second.exited;
    procs.live.delete(second);
    const third = await serveTelegramWithModel(procs, "preview", api, model, config);
    // A message after the restart: its answer is the last thing the restart would post.
    model.reply({ text: "You are welcome.", pieces: 1 });
    api.userSays(42, "thanks");
    await api.waitFor(
      () => api.chat(42).some((m) => m.text === "You are welcome."),
      30_000,
      "the next answer",
    );
    expect(api.chat(42).map((message) => message.text)).toEqual([
      DISCARDED_PREVIEW_TEXT,
      FINAL,
      "You are welcome.",
    ]);
    expect(api.calls.slice(calls).filter((call) => call.body.text === DISCARDED_PREVIEW_TEXT)).toEqual([]);
    expect(third.stdout()).toContain("listening on");
  }, 240_000);
});
