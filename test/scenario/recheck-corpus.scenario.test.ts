import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import {
  type CorpusAcknowledgement,
  type CorpusConversation,
  loadRecheckCorpus,
  ofSplit,
} from "../support/recheck-corpus.js";

// A sample of the held-out corpus, end to end through the gateway on a simulated clock: the first
// message gets the assistant's reply, the newest one gets the corpus draft, and a re-check pass (if
// the run decides to make one) gets a re-drafted reply. What the user receives is asserted.

const corpus = loadRecheckCorpus();
const REDRAFT = "Re-drafted for the newest message.";

/** Every `step`-th held-out item of a label: a spread over the file, not a hand-picked few. */
function sample<T extends { split: "tune" | "heldout" }>(
  items: T[],
  keep: (item: T) => boolean,
  step: number,
) {
  return ofSplit(items, "heldout")
    .filter(keep)
    .filter((_, index) => index % step === 0);
}

async function playConversation(
  first: string,
  assistant: string,
  newest: string,
  draft: string,
  redraft: string,
) {
  const scenario = {
    name: "a two-turn conversation",
    model: [
      { when: { recheck: true }, reply: { delayMs: 100, text: redraft } },
      { when: { latestUser: first }, reply: { delayMs: 100, text: assistant } },
      { when: { latestUser: newest }, reply: { delayMs: 100, text: draft } },
    ],
    channels: { web: {} },
    inbound: [
      { at: 0, session: "web:u", channel: "web", id: "u1", text: first },
      { at: 2000, session: "web:u", channel: "web", id: "u2", text: newest },
    ],
  };
  const { result } = await runScenario(parseScenario(JSON.stringify(scenario), "corpus.json"));
  return result;
}

const rechecks = (result: ScenarioResult) =>
  result.events.filter((event) => event.type === "recheck.fired" || event.type === "recheck.skipped");
const replies = (result: ScenarioResult) =>
  result.deliveries.filter((delivery) => delivery.kind === "reply").map((delivery) => delivery.text);

describe("held-out fluent conversations through the gateway", () => {
  const items = sample(corpus.conversations, (item) => item.label === "fluent", 8);
  it("samples short follow-ups too", () => {
    expect(items.length).toBeGreaterThanOrEqual(12);
  });

  for (const item of items as CorpusConversation[]) {
    it(`delivers the draft for "${item.newest}" (${item.id}) without a re-check`, async () => {
      const result = await playConversation(item.first, item.assistant, item.newest, item.draft, REDRAFT);
      expect(rechecks(result)).toEqual([]);
      expect(result.modelCalls.map((call) => call.recheck)).toEqual([false, false]);
      expect(replies(result)).toEqual([item.assistant, item.draft]);
    });
  }
});

describe("held-out stale drafts through the gateway", () => {
  const items = sample(corpus.conversations, (item) => item.label === "stale", 4);

  for (const item of items as CorpusConversation[]) {
    it(`re-drafts the answer to "${item.newest}" (${item.id}) and delivers the re-draft`, async () => {
      const result = await playConversation(item.first, item.assistant, item.newest, item.draft, REDRAFT);
      const fired = rechecks(result);
      expect(fired).toEqual([
        expect.objectContaining({
          type: "recheck.fired",
          reason: "low-overlap",
          detector: "built-in",
          fallback: false,
          figures: expect.objectContaining({
            newestOverlap: expect.any(Number),
            olderShared: expect.any(Number),
          }),
        }),
      ]);
      expect(Number((fired[0]!.figures as Record<string, number>).olderOverlap)).toBeGreaterThan(0);
      const recheckCall = result.modelCalls.find((call) => call.recheck);
      expect(recheckCall?.latestUser).toBe(item.newest);
      expect(replies(result)).toEqual([item.assistant, REDRAFT]);
      // The stale draft is kept, hidden, next to the re-check note; the user never saw it.
      const hidden = (result.transcripts["web:u"] ?? []).filter((record) => record.role === "custom");
      expect(hidden).toContainEqual(
        expect.objectContaining({ details: expect.objectContaining({ text: item.draft }) }),
      );
    });
  }
});

describe("held-out complaints through the gateway", () => {
  const heldoutReplies = ofSplit(corpus.acknowledgements, "heldout");
  const pairs = heldoutReplies
    .filter((item) => !item.acknowledges)
    .filter((_, index) => index % 3 === 0)
    .map((unacknowledged) => ({
      unacknowledged,
      acknowledged: heldoutReplies.find(
        (item) => item.acknowledges && item.complaint === unacknowledged.complaint,
      ),
    }))
    .filter((pair): pair is { unacknowledged: CorpusAcknowledgement; acknowledged: CorpusAcknowledgement } =>
      Boolean(pair.acknowledged),
    );

  it("samples several complaints", () => {
    expect(pairs.length).toBeGreaterThanOrEqual(4);
  });

  for (const { unacknowledged, acknowledged } of pairs) {
    it(`re-drafts a reply that ignores "${unacknowledged.complaint}" and delivers the acknowledging one`, async () => {
      const result = await playConversation(
        "When do deploys run?",
        "Our release notes are in the wiki.",
        unacknowledged.complaint,
        unacknowledged.reply,
        acknowledged.reply,
      );
      expect(rechecks(result)).toEqual([
        expect.objectContaining({
          type: "recheck.fired",
          reason: "complaint",
          figures: expect.objectContaining({ pattern: expect.any(String), acknowledged: false }),
        }),
      ]);
      expect(replies(result)).toEqual(["Our release notes are in the wiki.", acknowledged.reply]);
    });

    it(`ships an acknowledging reply to "${acknowledged.complaint}" as it is`, async () => {
      const result = await playConversation(
        "When do deploys run?",
        "Our release notes are in the wiki.",
        acknowledged.complaint,
        acknowledged.reply,
        REDRAFT,
      );
      expect(rechecks(result)).toEqual([]);
      expect(replies(result)).toEqual(["Our release notes are in the wiki.", acknowledged.reply]);
    });
  }
});
