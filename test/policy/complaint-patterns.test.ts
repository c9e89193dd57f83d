import { describe, expect, it } from "vitest";
import {
  acknowledgesComplaint,
  compilePatterns,
  DEFAULT_COMPLAINT_PATTERNS,
  MATCH_PREFIX_CHARS,
  matchComplaint,
} from "../../src/policy/complaint-patterns.js";

// The built-in complaint patterns against the eight patterns operators commonly run in a stale-reply
// guard of their own: every complaint one of those patterns was written for is caught by the defaults,
// while the defaults stay narrow enough not to count what those broad patterns over-match.

const defaults = compilePatterns(DEFAULT_COMPLAINT_PATTERNS);

const OPERATOR_PATTERNS: Array<{ pattern: string; complaints: string[] }> = [
  {
    pattern: "you(?:'re| are)? (?:answering|replying)? ?(?:to )?(?:the )?(?:wrong|stale|old|previous)\\b",
    complaints: [
      "you're answering the wrong question",
      "You are replying to the old message.",
      "you're replying to the previous one",
      "you answering the wrong thing again",
      "you're stale, read what I just wrote",
    ],
  },
  {
    pattern: "did(?:n['\u2019]t| not)? answer (?:my|the) (?:question|message|latest)\\b",
    complaints: [
      "You didn't answer my question.",
      "you did not answer the message I sent",
      "You didn\u2019t answer the question",
      "You didn't answer my latest",
    ],
  },
  {
    pattern: "that(?:['\u2019]s|s)? (?:the )?(?:wrong|stale|old) (?:answer|question)\\b",
    complaints: [
      "That's the wrong answer.",
      "thats the old question",
      "that's the stale answer",
      "that wrong answer",
    ],
  },
  {
    pattern: "wrong[- ]question",
    complaints: ["wrong question", "You answered the wrong question.", "Wrong-question again."],
  },
  {
    pattern: "stale[- ]reply",
    complaints: ["stale reply", "That's a stale-reply.", "Another stale reply."],
  },
  {
    pattern: "answer(?:ed)? (?:my )?previous",
    complaints: [
      "You answered my previous question, not this one.",
      "you answered previous one",
      "You answer my previous message, not the new one.",
    ],
  },
  {
    pattern: "(?:answer|address) (?:my )?(?:latest|current|new) (?:question|message|ask)",
    complaints: [
      "Please address my latest question.",
      "answer my current message",
      "please answer new question",
      "Address my new ask first.",
    ],
  },
  {
    pattern: "recheck.*(stale|duplicat|previous)",
    complaints: [
      "Can you recheck? That looks stale.",
      "recheck please, duplicate answer",
      "please recheck against my previous message",
    ],
  },
];

describe("the defaults cover the eight common operator patterns", () => {
  OPERATOR_PATTERNS.forEach(({ pattern, complaints }, index) => {
    it(`catches every complaint operator pattern ${index + 1} (/${pattern}/) was written for`, () => {
      const operator = new RegExp(pattern, "i");
      for (const text of complaints) {
        expect(operator.test(text), `the operator pattern matches "${text}"`).toBe(true);
        expect(matchComplaint(text, defaults), `the defaults match "${text}"`).toBeDefined();
      }
    });
  });

  it("does not count what those broad patterns over-match", () => {
    const overMatched = [
      "Why do people say there's no wrong question?",
      "I answered my previous manager's email yesterday.",
      "Our previous supplier did not answer the question about delivery dates.",
    ];
    for (const text of overMatched) {
      expect(
        OPERATOR_PATTERNS.some(({ pattern }) => new RegExp(pattern, "i").test(text)),
        `an operator pattern matches "${text}"`,
      ).toBe(true);
      expect(matchComplaint(text, defaults), `the defaults match "${text}"`).toBeUndefined();
    }
  });

  it("names the pattern that matched", () => {
    const source = matchComplaint("That answer is for the earlier question.", defaults);
    expect(DEFAULT_COMPLAINT_PATTERNS).toContain(source);
  });
});

describe("complaints and near-misses", () => {
  it("counts the complaints people write most", () => {
    for (const text of [
      "you answered my previous question, not this one",
      "please address my latest question",
      "can you recheck? that looks stale",
      "you're replying to my old message",
      "that answer is for the earlier question",
      "you didn't answer my question \u2014 what's the deploy command?",
    ]) {
      expect(matchComplaint(text, defaults), text).toBeDefined();
    }
  });

  it("does not count a message that uses the same words about something else", () => {
    for (const text of [
      "The FAQ has the wrong answer, please fix the FAQ.",
      "That answers my question, thanks!",
      "Can you read my last message to the team before I send it?",
      "Can you reply to my last message in the thread with Bob?",
      "Please recheck the invoice total.",
      "How do I handle stale cache entries in Redis?",
    ]) {
      expect(matchComplaint(text, defaults), text).toBeUndefined();
    }
  });

  it("matches only on the bounded prefix of a long message", () => {
    const filler = "lorem ipsum dolor sit amet ".repeat(100);
    expect(filler.length).toBeGreaterThan(MATCH_PREFIX_CHARS);
    expect(matchComplaint(`You didn't answer my question. ${filler}`, defaults)).toBeDefined();
    expect(matchComplaint(`${filler} You didn't answer my question.`, defaults)).toBeUndefined();
  });
});

describe("the acknowledgement of a re-drafted reply", () => {
  it("recognizes a reply that owns up to the missed question", () => {
    for (const reply of [
      "Sorry, that was stale. The deploy command is make deploy.",
      "You're right, I answered the earlier one. The staging URL is staging.example.com.",
      "Good catch. The build passed.",
      "I misread your message: the budget is 8,000 EUR.",
      "To answer your latest question: yes.",
    ]) {
      expect(acknowledgesComplaint(reply), reply).toBe(true);
    }
  });

  it("does not take sympathy or a recollection for an acknowledgement", () => {
    for (const reply of [
      "I'm sorry to hear the deploy failed; here are the logs.",
      "You asked me earlier about flights; the cheapest is 89 EUR.",
      "Our release notes are in the wiki.",
    ]) {
      expect(acknowledgesComplaint(reply), reply).toBe(false);
    }
  });

  it("looks for it only in the reply's prefix", () => {
    const filler = "lorem ipsum dolor sit amet ".repeat(100);
    expect(acknowledgesComplaint(`${filler} Sorry, you're right.`)).toBe(false);
  });
});
