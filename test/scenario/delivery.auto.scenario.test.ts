import { describe, expect, it } from "vitest";
import {
  deliveriesOf,
  eventIndex,
  expectMarkedOnce,
  expectMarkerBeforeRecovery,
  LONG,
  MARKER,
  MEDIUM_ONE_SENTENCE,
  MEDIUM_TWO_SENTENCES,
  RECOVERED,
  SHORT,
  strandScenario,
  transcript,
} from "../support/delivery.js";
import { customs, eventsOf, expectNoCrash, play, runOfTurn } from "../support/scenario.js";

// One part of the delivery scenarios; what they cover and share: test/support/delivery.ts.

describe("the texts used here sit where the substantive rule says", () => {
  it("uses finals of the lengths the rule distinguishes", () => {
    expect(LONG.length).toBeGreaterThanOrEqual(280);
    expect(MEDIUM_TWO_SENTENCES.length).toBeGreaterThanOrEqual(120);
    expect(MEDIUM_TWO_SENTENCES.length).toBeLessThan(280);
    expect(MEDIUM_ONE_SENTENCE.length).toBeGreaterThanOrEqual(120);
    expect(MEDIUM_ONE_SENTENCE.length).toBeLessThan(280);
    expect(SHORT.length).toBeLessThan(120);
  });
});

describe("auto mode: a final the channel did not commit", () => {
  it("stores the substantive final undelivered, marks it once and resends the same text once as a recovery", async () => {
    const result = await play(strandScenario({ text: LONG, channel: "{ failSends: 1 }" }));
    const records = transcript(result);
    const final = expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expect(final).toMatchObject({ text: LONG, seq: 2 });
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      "assistant",
      MARKER,
      RECOVERED,
    ]);
    expect(records[3]).toMatchObject({
      display: false,
      details: { strandedRunId: runOfTurn(result, 1), recovered: true },
    });

    expectMarkerBeforeRecovery(result);
    expect(eventsOf(result, "final.undelivered")).toHaveLength(1);
    expect(eventIndex(result, "final.undelivered")).toBeLessThan(eventIndex(result, "marker.appended"));
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["recovery", LONG]]);
    expect(deliveriesOf(result, "recovery")[0]?.messageId).not.toBe("");
    expect(eventsOf(result, "recovery.delivered")).toHaveLength(1);
    // An automatic recovery is one resend: no model call, no second marker.
    expect(result.modelCalls.filter((call) => call.recovery)).toEqual([]);
    expectNoCrash(result);
  });

  it("counts a receipt without a messageId as undelivered, so the final gets its marker", async () => {
    const result = await play(strandScenario({ text: LONG, channel: "{ omitMessageId: true }" }));
    const records = transcript(result);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expect(eventsOf(result, "final.delivered")).toEqual([]);
    expect(eventsOf(result, "final.undelivered")).toHaveLength(1);
    expectMarkerBeforeRecovery(result);
    // The resend comes back without a messageId too: it is not counted as recovered.
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({ details: { strandedRunId: runOfTurn(result, 1), recovered: false } }),
    ]);
    expectNoCrash(result);
  });

  it("counts a committed receipt as delivered: no marker and no recovery", async () => {
    const result = await play(strandScenario({ text: LONG }));
    const records = transcript(result);
    expect(records.at(-1)).toMatchObject({ role: "assistant", delivered: true, deliveryMessageId: "out-1" });
    expect(customs(records, MARKER)).toEqual([]);
    expect(eventsOf(result, "recovery.queued")).toEqual([]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["reply", LONG]]);
  });

  it("marks a short stranded final but queues no recovery for it", async () => {
    const result = await play(strandScenario({ text: SHORT, channel: "{ failSends: 1 }" }));
    const records = transcript(result);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expect(eventsOf(result, "marker.appended")).toHaveLength(1);
    expect(eventsOf(result, "recovery.queued")).toEqual([]);
    expect(customs(records, RECOVERED)).toEqual([]);
    expect(result.deliveries).toEqual([]);
    expectNoCrash(result);
  });

  it("recovers a stranded final of 120 to 280 characters only when it has two sentences or more", async () => {
    const two = await play(strandScenario({ text: MEDIUM_TWO_SENTENCES, channel: "{ failSends: 1 }" }));
    expectMarkedOnce(transcript(two), runOfTurn(two, 1), "automatic");
    expectMarkerBeforeRecovery(two);
    expect(two.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", MEDIUM_TWO_SENTENCES],
    ]);

    const one = await play(strandScenario({ text: MEDIUM_ONE_SENTENCE, channel: "{ failSends: 1 }" }));
    expectMarkedOnce(transcript(one), runOfTurn(one, 1), "automatic");
    expect(eventsOf(one, "recovery.queued")).toEqual([]);
    expect(one.deliveries).toEqual([]);
  });

  it("treats an empty final as silence: nothing is sent, stored or marked", async () => {
    const result = await play(strandScenario({ text: "", channel: "{ failSends: 1 }" }));
    const records = transcript(result);
    expect(records.map((record) => record.role)).toEqual(["user"]);
    expect(eventsOf(result, "final.silent")).toHaveLength(1);
    expect(eventsOf(result, "marker.appended")).toEqual([]);
    expect(result.deliveries).toEqual([]);
  });
});

describe("a recovery that strands too", () => {
  it("sends one short could-not-deliver notice, never the private text, and appends no second marker", async () => {
    const result = await play(strandScenario({ text: LONG, channel: "{ failSends: 2 }" }));
    const records = transcript(result);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expectMarkerBeforeRecovery(result);
    // One recovery attempt: the resend that failed.
    const failed = eventsOf(result, "delivery.failed").map((event) => event.kind);
    expect(failed).toEqual(["reply", "recovery"]);
    expect(eventsOf(result, "recovery.failed")).toHaveLength(1);
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({ details: { strandedRunId: runOfTurn(result, 1), recovered: false } }),
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
    const records = transcript(result);
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
