import { describe, expect, it } from "vitest";
import {
  callsOfTurn,
  expectEachMessageOnce,
  expectOneReadableAckEach,
  PASSES_SCENARIO,
  rechecks,
  runOfTurn,
} from "../support/recheck.js";
import { play, replies } from "../support/scenario.js";

// One part of the recheck scenarios; what they cover and share: test/support/recheck.ts.

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

describe("a correction while a tool runs", () => {
  const CORRECTION = `
name: correction while a tool runs
config:
  queue: { mode: steer }
  staleReplyRecheck: { enabled: true, maxPasses: 1 }
  delivery: { visibleReplies: auto }
model:
  - when: { latestUser: "break down", call: 1 }
    reply: { delayMs: 200, toolCalls: [{ name: write_file, args: { path: checklist.md } }, { name: write_file, args: { path: notes.md } }] }
  - when: { latestUser: "don't change" }
    reply: { delayMs: 300, text: "Understood: I will not change the file. Proposal: split item 2 into three steps first." }
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
tools:
  write_file: { durationMs: 3000, result: "written", cancellable: false }
channels:
  telegram: { failSends: 0, omitMessageId: false }
inbound:
  - { at: 0, session: "telegram:42", channel: telegram, id: m1, text: "Break down item 2 and update the file" }
  - { at: 1000, session: "telegram:42", channel: telegram, id: m2, text: "Don't change the file yet." }
`;

  it("steers the correction in, skips the second write, and delivers the correction's answer", async () => {
    const result = await play(CORRECTION);

    expect(result.acks.map((ack) => [ack.messageId, ack.disposition, ack.mode])).toEqual([
      ["m1", "started", "steer"],
      ["m2", "steered", "steer"],
    ]);
    // The steer ack is truthful: the running tool cannot be cancelled, and it will finish first.
    expect(result.acks[1]?.text).toMatch(/write_file/);
    expect(result.acks[1]?.text).toMatch(/cannot be cancelled/);
    expectOneReadableAckEach(result, ["m1", "m2"]);

    expect(result.toolCalls.map((call) => [call.name, call.args, call.status])).toEqual([
      ["write_file", { path: "checklist.md" }, "done"],
      ["write_file", { path: "notes.md" }, "skipped"],
    ]);
    expect(result.events.filter((event) => event.type === "tool.skipped")).toHaveLength(1);
    expect(result.events.find((event) => event.type === "steer.injected")).toMatchObject({
      messageIds: ["m2"],
      runId: runOfTurn(result, 1),
      at: 3200,
    });

    expect(result.modelCalls).toHaveLength(2);
    expect(result.modelCalls[1]).toMatchObject({
      runId: runOfTurn(result, 1),
      call: 2,
      recheck: false,
      latestUser: "Don't change the file yet.",
      userTexts: ["Break down item 2 and update the file", "Don't change the file yet."],
    });
    expect(rechecks(result)).toEqual([]);

    expect(result.deliveries).toEqual([
      expect.objectContaining({
        at: 3500,
        session: "telegram:42",
        channel: "telegram",
        kind: "reply",
        text: "Understood: I will not change the file. Proposal: split item 2 into three steps first.",
        runId: runOfTurn(result, 1),
      }),
    ]);
    expect(result.deliveries[0]?.messageId).not.toBe("");
  });

  it("stores the turn once: both messages, the done and skipped tool calls, then the delivered answer", async () => {
    const result = await play(CORRECTION);
    const records = result.transcripts["telegram:42"] ?? [];
    expect(records.map((record) => record.seq)).toEqual(records.map((_, index) => index + 1));
    expect(
      records.map((record) => {
        switch (record.role) {
          case "user":
            return `user ${record.messageId}`;
          case "toolCall":
            return `call ${JSON.stringify(record.args)}`;
          case "toolResult":
            return `result ${record.status}`;
          case "assistant":
            return `assistant delivered=${record.delivered}`;
          default:
            return String(record.role);
        }
      }),
    ).toEqual([
      "user m1",
      'call {"path":"checklist.md"}',
      "result done",
      'call {"path":"notes.md"}',
      "result skipped",
      "user m2",
      "assistant delivered=true",
    ]);
    expectEachMessageOnce(result, "telegram:42", ["m1", "m2"]);
  });
});
