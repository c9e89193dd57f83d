import { describe, expect, it } from "vitest";
import {
  acknowledgesComplaint,
  assessDraft,
  compilePatterns,
  DEFAULT_COMPLAINT_PATTERNS,
  matchComplaint,
  topicWords,
} from "../../src/policy/stale-reply.js";
import { conversationFacts, loadRecheckCorpus, ofSplit } from "../support/recheck-corpus.js";

// The re-check's thresholds, measured on the held-out part of the labelled corpus
// (test/fixtures/recheck-corpus/, docs/recheck.md): no false alarm on a fluent conversation, at least
// 95% of stale drafts and of complaints caught, no near-miss counted as a complaint, and the
// acknowledgement of a re-drafted reply recognized the same way.

const corpus = loadRecheckCorpus();
const settings = { complaintPatterns: compilePatterns(DEFAULT_COMPLAINT_PATTERNS), minOverlap: 0.2 };
const heldout = {
  conversations: ofSplit(corpus.conversations, "heldout"),
  phrasings: ofSplit(corpus.phrasings, "heldout"),
  acknowledgements: ofSplit(corpus.acknowledgements, "heldout"),
};

describe("the corpus", () => {
  const count = <T>(items: T[], keep: (item: T) => boolean) => items.filter(keep).length;

  it("has the shapes it is meant to measure, on both sides of the split", () => {
    const { conversations, phrasings, acknowledgements } = corpus;
    expect(count(conversations, (item) => item.label === "fluent")).toBeGreaterThanOrEqual(100);
    expect(count(conversations, (item) => item.label === "stale")).toBeGreaterThanOrEqual(30);
    expect(count(phrasings, (item) => item.label === "complaint")).toBeGreaterThanOrEqual(50);
    expect(count(phrasings, (item) => item.label === "near-miss")).toBeGreaterThanOrEqual(20);
    expect(count(acknowledgements, (item) => item.acknowledges)).toBeGreaterThanOrEqual(30);
    expect(count(acknowledgements, (item) => !item.acknowledges)).toBeGreaterThanOrEqual(20);
    for (const items of [conversations, phrasings, acknowledgements] as Array<Array<{ split: string }>>) {
      expect(count(items, (item) => item.split === "tune")).toBeGreaterThan(0);
      expect(count(items, (item) => item.split === "heldout")).toBeGreaterThan(items.length / 3);
    }
    expect(new Set(conversations.map((item) => item.id)).size).toBe(conversations.length);
  });

  it("is mostly short or anaphoric follow-ups among its fluent conversations", () => {
    const fluent = corpus.conversations.filter((item) => item.label === "fluent");
    const short = fluent.filter((item) => topicWords(item.newest).size <= 3);
    expect(short.length).toBeGreaterThanOrEqual(fluent.length / 2);
    for (const text of ["1", "why?", "go on", "and in python?", "the second one", "yes please send it"])
      expect(fluent.some((item) => item.newest.toLowerCase().startsWith(text))).toBe(true);
  });
});

describe("the thresholds on the held-out split", () => {
  const verdictOf = (item: (typeof heldout.conversations)[number]) =>
    assessDraft(conversationFacts(item), settings);

  it("raises no false alarm on a fluent conversation", () => {
    const fluent = heldout.conversations.filter((item) => item.label === "fluent");
    expect(fluent.length).toBeGreaterThanOrEqual(50);
    const alarms = fluent.filter((item) => verdictOf(item).stale).map((item) => item.id);
    expect(alarms).toEqual([]);
  });

  it("catches at least 95% of stale drafts, each for low-overlap", () => {
    const stale = heldout.conversations.filter((item) => item.label === "stale");
    const caught = stale.filter((item) => {
      const verdict = verdictOf(item);
      return verdict.stale && verdict.reason === "low-overlap";
    });
    const missed = stale.filter((item) => !caught.includes(item)).map((item) => item.id);
    expect(caught.length / stale.length, `missed ${missed.join(", ")}`).toBeGreaterThanOrEqual(0.95);
  });

  it("catches at least 95% of complaints and counts no near-miss", () => {
    const complaints = heldout.phrasings.filter((item) => item.label === "complaint");
    const missed = complaints.filter(
      (item) => matchComplaint(item.text, settings.complaintPatterns) === undefined,
    );
    expect(
      1 - missed.length / complaints.length,
      missed.map((item) => item.text).join(" | "),
    ).toBeGreaterThanOrEqual(0.95);
    const nearMisses = heldout.phrasings.filter((item) => item.label === "near-miss");
    const counted = nearMisses.filter(
      (item) => matchComplaint(item.text, settings.complaintPatterns) !== undefined,
    );
    expect(counted.map((item) => item.text)).toEqual([]);
  });

  it("takes no newest message of a fluent conversation for a complaint", () => {
    const counted = heldout.conversations.filter(
      (item) => matchComplaint(item.newest, settings.complaintPatterns) !== undefined,
    );
    expect(counted.map((item) => item.newest)).toEqual([]);
  });

  it("recognizes at least 95% of acknowledging re-drafts and takes no other reply for one", () => {
    const acknowledging = heldout.acknowledgements.filter((item) => item.acknowledges);
    const missed = acknowledging.filter((item) => !acknowledgesComplaint(item.reply));
    expect(
      1 - missed.length / acknowledging.length,
      missed.map((item) => item.reply).join(" | "),
    ).toBeGreaterThanOrEqual(0.95);
    const others = heldout.acknowledgements.filter((item) => !item.acknowledges);
    expect(others.filter((item) => acknowledgesComplaint(item.reply)).map((item) => item.reply)).toEqual([]);
  });

  it("re-drafts a complaint whose reply does not acknowledge it, and ships one that does", () => {
    for (const item of heldout.acknowledgements) {
      const verdict = assessDraft(
        { draft: item.reply, newest: item.complaint, older: ["When do deploys run?"], newerArrived: false },
        settings,
      );
      expect(verdict.stale, `${item.id}: ${item.reply}`).toBe(!item.acknowledges);
      if (verdict.stale) expect(verdict.reason).toBe("complaint");
    }
  });
});
