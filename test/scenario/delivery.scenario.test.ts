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
  recordKinds,
  SHORT,
  STRANDED,
  STRANDED_AND_RESENT,
  strandScenario,
} from "../support/delivery.js";
import { customs, eventsOf, expectNoCrash, play, runOfTurn, transcript } from "../support/scenario.js";

// Delivery and the undelivered-final marker end to end (docs/architecture.md, invariant 6), through the
// scenario runner on a simulated clock, asserting on the JSON output of docs/scenarios.md: the finals that strand in auto mode.

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
    const records = transcript(result, STRANDED);
    const final = expectMarkedOnce(records, runOfTurn(result, 1), "automatic") as { deliveryId?: string };
    // The final's intent is durable before the send; the assistant record is its receipt.
    expect(records[1]).toMatchObject({ details: { deliveryId: final.deliveryId } });
    expect(final).toMatchObject({ text: LONG, seq: 3, deliveryId: expect.stringMatching(/^reply:/) });
    expect(recordKinds(records)).toEqual(STRANDED_AND_RESENT);
    expect(records[5]).toMatchObject({
      display: false,
      details: { strandedRunId: runOfTurn(result, 1), recovered: true, deliveryId: final.deliveryId },
    });

    expectMarkerBeforeRecovery(result);
    expect(eventsOf(result, "final.undelivered")).toHaveLength(1);
    expect(eventIndex(result, "final.undelivered")).toBeLessThan(eventIndex(result, "marker.appended"));
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["recovery", LONG]]);
    expect(deliveriesOf(result, "recovery")[0]?.messageId).not.toBe("");
    // The resend is the same logical delivery as the failed send: a channel can tell them apart from
    // any other reply, and drop a second copy.
    expect(eventsOf(result, "delivery.failed").map((event) => event.deliveryId)).toEqual([final.deliveryId]);
    expect(eventsOf(result, "recovery.delivered")).toHaveLength(1);
    // An automatic recovery is one resend: no model call, no second marker.
    expect(result.modelCalls.filter((call) => call.recovery)).toEqual([]);
    expectNoCrash(result);
  });

  it("counts a receipt without a messageId as undelivered, so the final gets its marker", async () => {
    const result = await play(strandScenario({ text: LONG, channel: "{ omitMessageId: true }" }));
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expect(eventsOf(result, "final.delivered")).toEqual([]);
    expect(eventsOf(result, "final.undelivered")).toHaveLength(1);
    expectMarkerBeforeRecovery(result);
    // The resend comes back without a messageId too: it is not counted as recovered.
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({
        details: { strandedRunId: runOfTurn(result, 1), recovered: false, deliveryId: expect.any(String) },
      }),
    ]);
    expectNoCrash(result);
  });

  it("counts a committed receipt as delivered: no marker and no recovery", async () => {
    const result = await play(strandScenario({ text: LONG }));
    const records = transcript(result, STRANDED);
    expect(records.at(-1)).toMatchObject({ role: "assistant", delivered: true, deliveryMessageId: "out-1" });
    expect(customs(records, MARKER)).toEqual([]);
    expect(eventsOf(result, "recovery.queued")).toEqual([]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["reply", LONG]]);
  });

  it("resends a short stranded final once too: a network error never ends in silence", async () => {
    const result = await play(strandScenario({ text: SHORT, channel: "{ failSends: 1 }" }));
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    expect(eventsOf(result, "marker.appended")).toHaveLength(1);
    expectMarkerBeforeRecovery(result);
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ recovered: true }) }),
    ]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", SHORT],
    ]);
    expectNoCrash(result);
  });

  it("in auto mode resends a stranded final of any length once, one sentence or two", async () => {
    for (const text of [MEDIUM_TWO_SENTENCES, MEDIUM_ONE_SENTENCE]) {
      const result = await play(strandScenario({ text, channel: "{ failSends: 1 }" }));
      expectMarkedOnce(transcript(result, STRANDED), runOfTurn(result, 1), "automatic");
      expectMarkerBeforeRecovery(result);
      expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
        ["recovery", text],
      ]);
    }
  });

  it("treats an empty final as silence: nothing is sent, stored or marked", async () => {
    const result = await play(strandScenario({ text: "", channel: "{ failSends: 1 }" }));
    const records = transcript(result, STRANDED);
    expect(records.map((record) => record.role)).toEqual(["user"]);
    expect(eventsOf(result, "final.silent")).toHaveLength(1);
    expect(eventsOf(result, "marker.appended")).toEqual([]);
    expect(result.deliveries).toEqual([]);
  });
});
