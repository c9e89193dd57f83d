import { describe, expect, it } from "vitest";
import {
  deliveriesOf,
  expectMarkedOnce,
  expectMarkerBeforeRecovery,
  LONG,
  MARKER,
  RECOVERED,
  STRANDED,
  strandScenario,
} from "../support/delivery.js";
import { customs, eventsOf, expectNoCrash, play, runOfTurn, transcript } from "../support/scenario.js";

// Delivery end to end (docs/architecture.md, invariant 6): a recovery that strands too, and message_tool
// mode, where a final is private and a recovery is a model turn that sends.

describe("a recovery that strands too", () => {
  it("sends one short could-not-deliver notice, never the private text, and appends no second marker", async () => {
    const result = await play(strandScenario({ text: LONG, channel: "{ failSends: 2 }" }));
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expectMarkerBeforeRecovery(result);
    // One recovery attempt: the resend that failed.
    const failed = eventsOf(result, "delivery.failed").map((event) => event.kind);
    expect(failed).toEqual(["reply", "recovery"]);
    expect(eventsOf(result, "recovery.failed")).toHaveLength(1);
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({
        details: { strandedRunId: runOfTurn(result, 1), recovered: false, deliveryId: expect.any(String) },
      }),
    ]);

    expect(result.deliveries.map((delivery) => delivery.kind)).toEqual(["notice"]);
    const notice = result.deliveries[0]!;
    expect(notice.text).not.toBe(LONG);
    expect(notice.text).not.toContain("migration plan");
    expect(notice.text.length).toBeLessThan(120);
    expect(notice.messageId).not.toBe("");
    expectNoCrash(result);
  });

  it("keeps one marker and one recovery attempt when even the notice fails, and still finishes", async () => {
    const result = await play(strandScenario({ text: LONG, channel: "{ failSends: 10 }" }));
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expectMarkerBeforeRecovery(result);
    expect(eventsOf(result, "delivery.failed").map((event) => event.kind)).toEqual([
      "reply",
      "recovery",
      "notice",
    ]);
    expect(eventsOf(result, "notice.sent")).toEqual([expect.objectContaining({ delivered: false })]);
    expect(customs(records, RECOVERED)).toHaveLength(1);
    expect(result.deliveries).toEqual([]);
    // Both turns (the stranded one and its recovery) ended and released their lane slot.
    expect(eventsOf(result, "turn.ended").map((event) => event.runId)).toEqual([
      runOfTurn(result, 1),
      runOfTurn(result, 2),
    ]);
    expect(eventsOf(result, "lane.ended")).toHaveLength(2);
    expectNoCrash(result);
  });
});

describe("message_tool mode", () => {
  const SENT_BY_RECOVERY =
    "Sorry for the delay: freeze writes, copy in batches with checksums, then switch the readers.";

  it("keeps a final without a message tool call private, marks it message_tool_only and recovers it with a model turn that sends", async () => {
    const result = await play(
      strandScenario({
        text: LONG,
        visibleReplies: "message_tool",
        extraRules: `
  - when: { recovery: true, call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: message, args: { action: send, text: ${JSON.stringify(SENT_BY_RECOVERY)} } }] }
  - when: { recovery: true }
    reply: { delayMs: 50, text: "" }`,
      }),
    );
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "message_tool_only");
    expectMarkerBeforeRecovery(result);
    expect(eventsOf(result, "final.undelivered")).toEqual([
      expect.objectContaining({ runId: runOfTurn(result, 1), reason: "the message tool was not used" }),
    ]);
    // The private final never went out; the recovery turn's message tool send did.
    expect(deliveriesOf(result, "reply")).toEqual([]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text, delivery.runId])).toEqual([
      ["recovery", SENT_BY_RECOVERY, runOfTurn(result, 2)],
    ]);
    expect(result.deliveries.some((delivery) => delivery.text === LONG)).toBe(false);
    // The recovery is a model turn flagged `recovery`, limited to the message tool.
    const recoveryCalls = result.modelCalls.filter((call) => call.recovery);
    expect(recoveryCalls.map((call) => [call.runId, call.call])).toEqual([
      [runOfTurn(result, 2), 1],
      [runOfTurn(result, 2), 2],
    ]);
    expect(result.toolCalls).toEqual([
      expect.objectContaining({
        runId: runOfTurn(result, 2),
        name: "message",
        args: { action: "send", text: SENT_BY_RECOVERY },
        status: "done",
      }),
    ]);
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ recovered: true }) }),
    ]);
    expect(eventsOf(result, "notice.sent")).toEqual([]);
    expectNoCrash(result);
  });

  it("sends one notice when the recovery turn does not use the message tool, and marks nothing twice", async () => {
    const result = await play(
      strandScenario({
        text: LONG,
        visibleReplies: "message_tool",
        extraRules: `
  - when: { recovery: true }
    reply: { delayMs: 100, text: "I would rather not resend that." }`,
      }),
    );
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "message_tool_only");
    expectMarkerBeforeRecovery(result);
    expect(result.modelCalls.filter((call) => call.recovery)).toHaveLength(1);
    expect(result.deliveries.map((delivery) => delivery.kind)).toEqual(["notice"]);
    expect(result.deliveries[0]?.text).not.toContain("migration plan");
    expect(result.deliveries[0]?.text).not.toContain("resend");
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ recovered: false }) }),
    ]);
    expectNoCrash(result);
  });

  it("gives a turn that sent with the message tool no marker, and delivers its send as a reply", async () => {
    const result = await play(
      strandScenario({
        text: "unused",
        visibleReplies: "message_tool",
        extraRules: `
  - when: { call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: message, args: { action: send, text: "Freeze, copy, verify, switch." } }] }
  - when: { hasToolResult: message }
    reply: { delayMs: 50, text: ${JSON.stringify(LONG)} }`,
      }),
    );
    const records = transcript(result, STRANDED);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["reply", "Freeze, copy, verify, switch."],
    ]);
    // The closing words stay private, but the turn did reach the user: stored as delivered, unmarked.
    expect(records.filter((record) => record.role === "assistant")).toEqual([
      expect.objectContaining({ text: LONG, delivered: true }),
    ]);
    expect(customs(records, MARKER)).toEqual([]);
    expect(eventsOf(result, "marker.appended")).toEqual([]);
    expect(eventsOf(result, "recovery.queued")).toEqual([]);
  });
});
