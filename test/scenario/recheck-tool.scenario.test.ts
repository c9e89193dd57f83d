import { describe, expect, it } from "vitest";
import { expectEachMessageOnce, expectOneReadableAckEach, rechecks, runOfTurn } from "../support/recheck.js";
import { play } from "../support/scenario.js";

// The stale-reply re-check end to end (docs/recheck.md): a correction steered in while a tool runs.

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
      "custom",
      "assistant delivered=true",
    ]);
    expectEachMessageOnce(result, "telegram:42", ["m1", "m2"]);
  });
});
