import { describe, expect, it } from "vitest";
import {
  assessDraft,
  compareOverlap,
  compilePatterns,
  DEFAULT_COMPLAINT_PATTERNS,
  type DraftFacts,
  measureTopic,
  topicWords,
} from "../../src/policy/stale-reply.js";

// `low-overlap` reads the conversation: a newest message with few words of its own continues the
// exchange (the assistant's last visible message and the user message before it), so a draft on that
// topic is not off-topic; only what the follow-up adds must show up in the draft.

const settings = { complaintPatterns: compilePatterns(DEFAULT_COMPLAINT_PATTERNS), minOverlap: 0.2 };

function facts(first: string, assistant: string, newest: string, draft: string): DraftFacts {
  return {
    draft,
    newest,
    older: [first],
    newerArrived: false,
    previousUser: first,
    lastAssistant: assistant,
  };
}

/** Follow-ups that used to be called stale: the draft repeats two or more words of the first message. */
const FOLLOW_UPS: Array<[first: string, assistant: string, newest: string, draft: string]> = [
  [
    "Should I use Postgres or SQLite for the internal tool?",
    "Two options: 1) SQLite, zero setup; 2) Postgres, if several people write at once.",
    "1",
    "SQLite it is: the internal tool opens one SQLite file at startup.",
  ],
  [
    "Can you prepare the database migration tonight?",
    "Sure. I'll prepare the migration for 22:00 tonight.",
    "how long will that take?",
    "The database migration should be finished about 20 minutes after it starts, by 22:20.",
  ],
  [
    "Compare quicksort and mergesort for sorting large arrays.",
    "Quicksort is in-place; mergesort is stable and needs extra memory.",
    "which one is faster?",
    "Quicksort usually wins over mergesort on large arrays, thanks to cache locality.",
  ],
  [
    "Draft a reply to the landlord about the broken heater.",
    "Here's a draft asking him to repair the heater this week.",
    "yes please",
    "Sent the reply to the landlord about the broken heater.",
  ],
  [
    "Restart the web server tonight after the backup.",
    "I'd wait for the backup: it ends at 23:00.",
    "do it",
    "The web server restart is scheduled tonight, right after the backup ends.",
  ],
  [
    "Should I restart the web server now or tonight?",
    "I'd wait until tonight.",
    "why?",
    "Restarting the web server now would log out everyone on it; tonight nobody is.",
  ],
  [
    "Which headline is better: 'Cut costs fast' or 'Spend less, keep more'?",
    "I'd go with the second.",
    "the second one",
    "Great: 'Spend less, keep more' is the headline, it beats 'Cut costs fast'.",
  ],
];

describe("low-overlap on short follow-ups", () => {
  for (const [first, assistant, newest, draft] of FOLLOW_UPS) {
    it(`does not fire for "${newest}" after "${first}"`, () => {
      // Read as two strings, the draft looks like an answer to the first message.
      const older = compareOverlap(draft, newest, [first]);
      expect(older?.shared).toBeGreaterThanOrEqual(2);
      expect(assessDraft(facts(first, assistant, newest, draft), settings)).toEqual({ stale: false });
    });
  }

  it("never fires for a short correct answer, whatever the conversation", () => {
    const verdict = assessDraft(
      facts("What is the capital of France?", "Paris.", "what's 2+2?", "4."),
      settings,
    );
    expect(verdict).toEqual({ stale: false });
    expect(
      measureTopic(facts("What is the capital of France?", "Paris.", "what's 2+2?", "4.")),
    ).toBeUndefined();
  });

  it("fires when a follow-up adds a word the draft ignores while it restates the first answer", () => {
    const verdict = assessDraft(
      facts(
        "How do I list the files in a directory in bash?",
        "Use ls -la.",
        "and in PowerShell?",
        "In bash, list the files in a directory with ls -la; add -h for readable sizes.",
      ),
      settings,
    );
    expect(verdict).toMatchObject({
      stale: true,
      reason: "low-overlap",
      figures: { newestOverlap: 0, inherited: true, targetWords: 1, minOverlap: 0.2 },
    });
    if (verdict.stale) {
      expect(verdict.figures?.olderOverlap).toBeGreaterThanOrEqual(0.5);
      expect(verdict.detail).toMatch(/0% with the newest message \(beyond the exchange it continues\)/);
    }
  });

  it("accepts the draft that answers what the follow-up adds", () => {
    const verdict = assessDraft(
      facts(
        "How do I list the files in a directory in bash?",
        "Use ls -la.",
        "and in PowerShell?",
        "In PowerShell, use Get-ChildItem, or its alias dir.",
      ),
      settings,
    );
    expect(verdict).toEqual({ stale: false });
  });

  it("takes a choice or a fact about the user's situation as a continuation when the draft picks an option", () => {
    const bus = facts(
      "Should I take the bus or walk to the museum?",
      "Walking takes 25 minutes along the river; the bus takes 10.",
      "it's raining",
      "Then take the bus: line 4 stops right outside the museum.",
    );
    expect(measureTopic(bus)?.continuation).toBe(true);
    expect(assessDraft(bus, settings)).toEqual({ stale: false });
    // A correction is not a situation: "I meant Berlin" still has to be answered.
    const correction = facts(
      "What's the weather in Paris today?",
      "Sunny, 24 degrees.",
      "I meant Berlin",
      "Paris weather today: sunny in Paris, 24 degrees.",
    );
    expect(assessDraft(correction, settings)).toMatchObject({ stale: true, reason: "low-overlap" });
  });

  it("without the assistant's message (a message steered mid-turn), takes the previous user message as the exchange", () => {
    const verdict = assessDraft(
      {
        draft: "Paris weather today: sunny in Paris, 24 degrees.",
        newest: "And Berlin?",
        older: ["What's the weather in Paris today?"],
        newerArrived: false,
      },
      settings,
    );
    expect(verdict).toMatchObject({ stale: true, reason: "low-overlap" });
  });

  it("drops the words that only point back at the exchange", () => {
    expect([...topicWords("sure, the second one please")]).toEqual([]);
    expect([...topicWords("how long will that take?")]).toEqual([]);
    expect([...topicWords("and in python?")]).toEqual(["python"]);
    expect([...topicWords("I don't have the Anmeldung yet")]).toEqual(["anmeldung"]);
  });
});
