import { describe, expect, it } from "vitest";
import {
  callsOfTurn,
  expectEachMessageOnce,
  expectOneReadableAckEach,
  rechecks,
} from "../support/recheck.js";
import { play, replies } from "../support/scenario.js";

// The stale-reply re-check end to end (docs/recheck.md): the re-check limit (maxPasses, disabled) while
// messages keep arriving during the draft.

const PASSES_SCENARIO = (recheck: string) => `
name: messages keep arriving while the answer is drafted
config:
  staleReplyRecheck: ${recheck}
model:
  - when: { recheck: true }
    reply: { delayMs: 1000, text: "Re-drafted for: {{latestUser}}" }
  - reply: { delayMs: 1000, text: "Draft for: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: q1, text: "What's the weather in Paris?" }
  - { at: 500, session: "web:a", channel: web, id: q2, text: "And Berlin?" }
  - { at: 1500, session: "web:a", channel: web, id: q3, text: "And Rome?" }
  - { at: 2500, session: "web:a", channel: web, id: q4, text: "And Oslo?" }
`;

describe("the re-check limit", () => {
  it("with maxPasses 0 never re-drafts: the stale draft ships with recheck.skipped (limit), the newer message gets its own turn", async () => {
    const result = await play(PASSES_SCENARIO("{ maxPasses: 0 }"));
    expect(result.events.filter((event) => event.type === "recheck.fired")).toEqual([]);
    expect(rechecks(result)).toContainEqual({ type: "recheck.skipped", reason: "limit", turn: 1 });
    expect(result.modelCalls.every((call) => !call.recheck)).toBe(true);
    expect(replies(result)[0]?.text).toBe("Draft for: What's the weather in Paris?");
    // The message that made the draft stale is answered next, in a turn of its own.
    expect(callsOfTurn(result, 2)[0]?.userTexts).toEqual(["And Berlin?"]);
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
    expectOneReadableAckEach(result, ["q1", "q2", "q3", "q4"]);
  });

  it("with maxPasses 1 re-drafts once, then ships the next stale draft with recheck.skipped (limit)", async () => {
    const result = await play(PASSES_SCENARIO("{ maxPasses: 1 }"));
    const firstRun = rechecks(result).filter((event) => event.turn === 1);
    expect(firstRun).toEqual([
      { type: "recheck.fired", reason: "newer-message", turn: 1 },
      { type: "recheck.skipped", reason: "limit", turn: 1 },
    ]);
    expect(callsOfTurn(result, 1).map((call) => call.userTexts)).toEqual([
      ["What's the weather in Paris?"],
      ["What's the weather in Paris?", "And Berlin?"],
    ]);
    expect(replies(result)[0]?.text).toBe("Re-drafted for: And Berlin?");
    // q3 reached the run too late for its one pass: it starts the next turn instead of being lost.
    expect(callsOfTurn(result, 2)[0]?.userTexts[0]).toBe("And Rome?");
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
    expectOneReadableAckEach(result, ["q1", "q2", "q3", "q4"]);
  });

  it("with maxPasses 2 re-drafts twice, then ships the third draft with recheck.skipped (limit)", async () => {
    const result = await play(PASSES_SCENARIO("{ maxPasses: 2 }"));
    expect(rechecks(result).filter((event) => event.turn === 1)).toEqual([
      { type: "recheck.fired", reason: "newer-message", turn: 1 },
      { type: "recheck.fired", reason: "newer-message", turn: 1 },
      { type: "recheck.skipped", reason: "limit", turn: 1 },
    ]);
    expect(callsOfTurn(result, 1).map((call) => call.recheck)).toEqual([false, true, true]);
    expect(callsOfTurn(result, 1).at(-1)?.userTexts).toEqual([
      "What's the weather in Paris?",
      "And Berlin?",
      "And Rome?",
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Re-drafted for: And Rome?",
      "Draft for: And Oslo?",
    ]);
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
  });

  it("never fires more than maxPasses times in one run, for maxPasses 0, 1 and 2", async () => {
    for (const maxPasses of [0, 1, 2]) {
      const result = await play(PASSES_SCENARIO(`{ maxPasses: ${maxPasses} }`));
      const firedPerRun = new Map<string, number>();
      for (const event of result.events) {
        if (event.type === "recheck.fired") {
          firedPerRun.set(String(event.runId), (firedPerRun.get(String(event.runId)) ?? 0) + 1);
        }
      }
      for (const count of firedPerRun.values()) expect(count).toBeLessThanOrEqual(maxPasses);
    }
  });

  it("with the re-check disabled never re-drafts and says so with recheck.skipped (disabled)", async () => {
    const result = await play(PASSES_SCENARIO("{ enabled: false, maxPasses: 1 }"));
    expect(result.events.filter((event) => event.type === "recheck.fired")).toEqual([]);
    expect(rechecks(result)[0]).toEqual({ type: "recheck.skipped", reason: "disabled", turn: 1 });
    expect(rechecks(result).every((event) => event.reason === "disabled")).toBe(true);
    expect(result.modelCalls.every((call) => !call.recheck)).toBe(true);
    expect(replies(result)[0]?.text).toBe("Draft for: What's the weather in Paris?");
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
    expectOneReadableAckEach(result, ["q1", "q2", "q3", "q4"]);
  });
});
