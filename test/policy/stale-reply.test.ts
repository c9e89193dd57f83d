import { describe, expect, it } from "vitest";
import {
  assessDraft,
  compareOverlap,
  compilePatterns,
  contentTokens,
  DEFAULT_COMPLAINT_PATTERNS,
  type DraftFacts,
  MATCH_PREFIX_CHARS,
  reanchorInstruction,
  type StaleReplySettings,
} from "../../src/policy/stale-reply.js";

const settings: StaleReplySettings = {
  complaintPatterns: compilePatterns(DEFAULT_COMPLAINT_PATTERNS),
  minOverlap: 0.2,
};

function assess(facts: Partial<DraftFacts> & Pick<DraftFacts, "draft" | "newest">, custom = settings) {
  return assessDraft({ older: [], newerArrived: false, ...facts }, custom);
}

describe("assessDraft: each signal fires in its situation", () => {
  it("fires newer-message when a user message reached the turn after the draft's model call", () => {
    const verdict = assess({
      draft: "Paris: sunny, 24 degrees.",
      newest: "What's the weather in Paris?",
      newerArrived: true,
    });
    expect(verdict).toMatchObject({ stale: true, reason: "newer-message" });
  });

  it("fires newer-message first, even when the newest message is also a complaint", () => {
    const verdict = assess({
      draft: "Our release notes are in the wiki.",
      newest: "You didn't answer my question.",
      newerArrived: true,
    });
    expect(verdict).toMatchObject({ stale: true, reason: "newer-message" });
  });

  it("fires complaint when the user says the question was missed and the draft ignores it", () => {
    const verdict = assess({
      draft: "Release notes are published weekly.",
      newest: "You didn't answer my question.",
      older: ["When do deploys run?"],
    });
    expect(verdict).toMatchObject({ stale: true, reason: "complaint" });
    if (verdict.stale) expect(verdict.detail).not.toBe("");
  });

  it("fires low-overlap when the draft talks about an older message instead of the newest", () => {
    const verdict = assess({
      draft: "Paris weather today: sunny in Paris, 24 degrees.",
      newest: "Actually, what about Berlin tonight?",
      older: ["What's the weather in Paris today?"],
    });
    expect(verdict).toMatchObject({ stale: true, reason: "low-overlap" });
    if (verdict.stale) expect(verdict.detail).toMatch(/0%.*100%/);
  });

  it("fires low-overlap against any of several older messages, the closest one counting", () => {
    const verdict = assess({
      draft: "The quarterly budget spreadsheet is attached; budget totals are in column F.",
      newest: "Can you book the meeting room for Thursday?",
      older: ["Hi there", "Send me the quarterly budget spreadsheet"],
    });
    expect(verdict).toMatchObject({ stale: true, reason: "low-overlap" });
  });
});

describe("assessDraft: no false positives", () => {
  it('accepts "4." as the answer to "what\'s 2+2?"', () => {
    const verdict = assess({ draft: "4.", newest: "what's 2+2?", older: ["What is the capital of France?"] });
    expect(verdict).toEqual({ stale: false });
  });

  it("accepts a fluent answer to the newest message", () => {
    const verdict = assess({
      draft: "Berlin tonight: light rain and 12 degrees, so take an umbrella.",
      newest: "Actually, what about Berlin tonight?",
      older: ["What's the weather in Paris today?"],
    });
    expect(verdict).toEqual({ stale: false });
  });

  it("accepts an answer that covers the newest message and mentions the older one", () => {
    const verdict = assess({
      draft: "Unlike sunny Paris today, Berlin tonight will see light rain.",
      newest: "Actually, what about Berlin tonight?",
      older: ["What's the weather in Paris today?"],
    });
    expect(verdict).toEqual({ stale: false });
  });

  it("accepts a draft that acknowledges the complaint", () => {
    const verdict = assess({
      draft: "Sorry, you're right. To answer your question: deploys run every weekday at 10:00.",
      newest: "You didn't answer my question.",
      older: ["When do deploys run?"],
    });
    expect(verdict).toEqual({ stale: false });
  });

  it("accepts silence (an empty draft) without a newer message", () => {
    expect(assess({ draft: "  ", newest: "You didn't answer my question." })).toEqual({ stale: false });
  });

  it("does not compare overlap when the turn has no older message", () => {
    const verdict = assess({ draft: "Paris weather today: sunny in Paris.", newest: "Berlin tonight?" });
    expect(verdict).toEqual({ stale: false });
  });

  it("needs at least two shared words with the older message before it calls a draft off-topic", () => {
    const verdict = assess({
      draft: "Paris is lovely.",
      newest: "Actually, what about Berlin tonight?",
      older: ["Paris?"],
    });
    expect(verdict).toEqual({ stale: false });
  });
});

describe("DEFAULT_COMPLAINT_PATTERNS", () => {
  const phrasings: Array<[pattern: number, text: string]> = [
    [1, "You didn't answer my question."],
    [9, "That's not what I asked."],
    [2, "Wrong answer, I was asking about Berlin."],
    [7, "Please answer my latest question."],
    [10, "That was my previous question, not this one."],
    [0, "You're answering the wrong thing again"],
    [11, "Read my last message, please."],
    [12, "No, I asked about something else."],
    [3, "You answered the wrong question."],
    [4, "Stale reply, again."],
    [5, "You answered my previous question, not this one."],
    [6, "That answer is for the earlier question."],
    [8, "Can you recheck? That looks stale."],
    [13, "You missed my question."],
    [14, "That doesn't answer my question."],
    [15, "I asked about the tests, not the deploy."],
    [16, "Are you ignoring me?"],
    [17, "Did you even read my message?"],
    [18, "hello??"],
  ];
  const regexes = compilePatterns(DEFAULT_COMPLAINT_PATTERNS);

  it("has a realistic phrasing listed here for every default pattern", () => {
    expect(new Set(phrasings.map(([index]) => index)).size).toBe(DEFAULT_COMPLAINT_PATTERNS.length);
  });

  for (const [index, text] of phrasings) {
    it(`matches "${text}" with pattern ${index + 1}`, () => {
      expect(regexes[index]?.test(text)).toBe(true);
    });
  }

  it("matches whatever the letter case", () => {
    expect(regexes[1]?.test("YOU DID NOT ANSWER THE QUESTION")).toBe(true);
    expect(regexes[9]?.test("not What I Meant")).toBe(true);
  });

  const ordinary = [
    "What's the weather in Paris?",
    "Can you summarize the meeting notes from Tuesday?",
    "Thanks, that works!",
    "Please update the file with the new numbers.",
    "What went wrong with the deploy? Did you see my email about it?",
  ];
  for (const text of ordinary) {
    it(`matches no pattern in the ordinary message "${text}"`, () => {
      expect(DEFAULT_COMPLAINT_PATTERNS.filter((_, index) => regexes[index]?.test(text))).toEqual([]);
    });
  }
});

describe("bounded matching of long messages", () => {
  const megabyte = "lorem ipsum dolor sit amet ".repeat(40_000);

  it("matches a 1 MB message only on its prefix", () => {
    const seen: number[] = [];
    const spy = /didn't answer my question/i;
    const test = spy.test.bind(spy);
    spy.test = (text: string) => {
      seen.push(text.length);
      return test(text);
    };
    const verdict = assess(
      { draft: "Release notes are weekly.", newest: `${megabyte}You didn't answer my question.` },
      { complaintPatterns: [spy], minOverlap: 0.2 },
    );
    expect(megabyte.length).toBeGreaterThan(1_000_000);
    expect(seen).toEqual([MATCH_PREFIX_CHARS]);
    expect(verdict).toEqual({ stale: false });
  });

  it("still sees a complaint at the start of a 1 MB message", () => {
    const verdict = assess({
      draft: "Release notes are weekly.",
      newest: `You didn't answer my question. ${megabyte}`,
    });
    expect(verdict).toMatchObject({ stale: true, reason: "complaint" });
  });

  it("looks for the acknowledgement only in the draft's prefix", () => {
    const verdict = assess({
      draft: `${megabyte} Sorry, you're right.`,
      newest: "You didn't answer my question.",
    });
    expect(verdict).toMatchObject({ stale: true, reason: "complaint" });
  });

  it("takes content tokens only from a bounded prefix", () => {
    const tokens = contentTokens(`${megabyte} zebra`);
    expect(tokens.has("zebra")).toBe(false);
    expect(tokens.has("lorem")).toBe(true);
  });
});

describe("content tokens and overlap", () => {
  it("drops stopwords, short words and numbers", () => {
    const tokens = contentTokens("What's the weather in Paris? Is it ok to go, 24 or 25 degrees?");
    expect(tokens.size).toBe(3);
    for (const word of ["what", "the", "is", "it", "ok", "to", "go", "24", "25"]) {
      expect(contentTokens(word).size).toBe(0);
    }
  });

  it("lets inflected forms of a word meet: files/file, updated/update, checking/check", () => {
    const pairs = [
      ["files", "file"],
      ["updated", "update"],
      ["checking", "check"],
      ["degrees", "degree"],
      ["makes", "making"],
    ];
    for (const [a, b] of pairs) expect([...contentTokens(a!)]).toEqual([...contentTokens(b!)]);
  });

  it("counts a draft that says 'file' as answering a message about 'files'", () => {
    const overlap = compareOverlap("I updated the file.", "Please update the files", [
      "Summarize the meeting",
    ]);
    expect(overlap?.newest).toBe(1);
  });

  it("reports no overlap for a draft without content words", () => {
    expect(compareOverlap("4.", "what's 2+2?", ["What is the capital of France?"])).toBeUndefined();
  });

  it("gives the share of each message's content tokens that the draft repeats", () => {
    const overlap = compareOverlap("Paris weather today: sunny.", "Actually, what about Berlin tonight?", [
      "What's the weather in Paris today?",
    ]);
    expect(overlap).toEqual({ newest: 0, older: 1, shared: 3 });
  });
});

describe("complaint pattern compilation and the re-anchor instruction", () => {
  it("compiles patterns case-insensitively, once per distinct list", () => {
    const first = compilePatterns(["\\bnope\\b"]);
    expect(first[0]?.test("NOPE")).toBe(true);
    expect(compilePatterns(["\\bnope\\b"])).toBe(first);
  });

  it("asks the model to acknowledge a complaint before answering", () => {
    const text = reanchorInstruction("complaint", "You didn't answer my question.");
    expect(text).toContain(JSON.stringify("You didn't answer my question."));
    expect(text).toMatch(/acknowledg/i);
  });

  it("points the model at the newest message, quoting at most 500 characters of it", () => {
    const newest = "x".repeat(2_000);
    const text = reanchorInstruction("newer-message", newest);
    expect(text).toContain(JSON.stringify("x".repeat(500)));
    expect(text).not.toContain("x".repeat(501));
  });
});
