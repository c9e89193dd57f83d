import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelMessage } from "../../src/policy/turn-context.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";
import { DELIVERY_INTENT } from "../../src/ports/store.js";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import {
  expectMarkedOnce,
  expectMarkerBeforeRecovery,
  LONG,
  MARKER,
  RECOVERED,
  SHORT,
  STRANDED,
  strandScenario,
} from "../support/delivery.js";
import {
  customs,
  expectNoCrash,
  play,
  runOfTurn,
  type StoredRecord,
  transcript,
} from "../support/scenario.js";

// Delivery end to end (docs/architecture.md, invariant 6): follow-up turns share the delivery path, and
// later turns see that a final was never shown.

describe("direct and queued follow-up turns share the delivery path", () => {
  it("marks and recovers a stranded final of a queued follow-up turn like that of a direct turn", async () => {
    const direct = await play(strandScenario({ text: LONG, channel: "{ failSends: 1 }" }));
    const followup = await play(`
name: the stranded final comes from a follow-up turn
config:
  queue: { mode: followup }
model:
  - when: { latestUser: "thanks" }
    reply: { delayMs: 300, text: "" }
  - when: { latestUser: "anything else" }
    reply: { delayMs: 300, text: "Nothing else for now." }
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: { failSends: 1 }
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p0, text: "thanks for earlier" }
  - { at: 100, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
  - { at: 200, session: "telegram:7", channel: telegram, id: p2, text: "anything else?" }
`);
    expect(followup.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["p0", "started"],
      ["p1", "queued"],
      ["p2", "queued"],
    ]);
    // The first turn is silent (no send), so the follow-up turn's final meets the failing send.
    const directRecords = transcript(direct, STRANDED);
    const followupRecords = transcript(followup, STRANDED);
    const directFinal = expectMarkedOnce(directRecords, runOfTurn(direct, 1), "automatic");
    const followupFinal = expectMarkedOnce(followupRecords, runOfTurn(followup, 2), "automatic");
    const markerOf = (records: StoredRecord[], final: StoredRecord) =>
      records.find((record) => record.seq === (final.seq ?? 0) + 1);
    const shape = (record: StoredRecord | undefined) => {
      if (record?.role !== "custom") return undefined;
      const { finalSeq: _seq, ...details } = record.details ?? {};
      return { customType: record.customType, display: record.display, details };
    };
    expect(shape(markerOf(followupRecords, followupFinal))).toEqual(
      shape(markerOf(directRecords, directFinal)),
    );
    expectMarkerBeforeRecovery(followup);

    const kinds = (result: ScenarioResult) =>
      result.deliveries.map((delivery) => [delivery.kind, delivery.text]);
    expect(kinds(direct)).toEqual([["recovery", LONG]]);
    // The recovery goes to the front of the queue: before the follow-up that waited behind the turn.
    expect(kinds(followup)).toEqual([
      ["recovery", LONG],
      ["reply", "Nothing else for now."],
    ]);
    expect(customs(followupRecords, RECOVERED)).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({ strandedRunId: runOfTurn(followup, 2), recovered: true }),
      }),
    ]);
    expect(followupRecords.flatMap((record) => (record.role === "user" ? [record.messageId] : []))).toEqual([
      "p0",
      "p1",
      "p2",
    ]);
    expectNoCrash(followup);
  });
});

describe("later turns see that a final was never shown", () => {
  it("keeps the marker next to its final while later turns append after it", async () => {
    const result = await play(`
name: a later turn after a stranded short final
config:
  staleReplyRecheck: { enabled: false }
model:
  - when: { latestUser: "did you see" }
    reply: { delayMs: 200, text: "Sorry, my last answer did not reach you: the table is migrated." }
  - reply: { delayMs: 200, text: ${JSON.stringify(SHORT)} }
channels:
  telegram: { failSends: 1 }
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "Is the orders table migrated?" }
  - { at: 1000, session: "telegram:7", channel: telegram, id: p2, text: "Hello? Did you see my question?" }
`);
    const records = transcript(result, STRANDED);
    expectMarkedOnce(records, runOfTurn(result, 1), "automatic");
    // The short final is resent once (its recovery), and the marker stays right after it.
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      DELIVERY_INTENT,
      "assistant",
      MARKER,
      DELIVERY_INTENT,
      RECOVERED,
      "user",
      DELIVERY_INTENT,
      "assistant",
    ]);
    // Turn 2 is the resend (no model call); turn 3 answers the second message.
    expect(records.at(-1)).toMatchObject({ runId: runOfTurn(result, 3), delivered: true });
    expect(result.modelCalls.map((call) => [call.runId, call.latestUser])).toEqual([
      [runOfTurn(result, 1), "Is the orders table migrated?"],
      [runOfTurn(result, 3), "Hello? Did you see my question?"],
    ]);
    expect(result.deliveries.map((delivery) => delivery.kind)).toEqual(["recovery", "reply"]);
  });

  it("shows the next model call a note right after the undelivered final, and a recovered note after a recovery", async () => {
    const clock = new SimulatedClock();
    const contexts: ModelMessage[][] = [];
    const model: ModelProvider = {
      async complete(request: ModelRequest): Promise<ModelReply> {
        contexts.push(request.context);
        const latest = request.context.findLast((message) => message.role === "user");
        const text = latest?.role === "user" && latest.text.includes("plan") ? LONG : SHORT;
        return { text, toolCalls: [] };
      },
    };
    const channel = new LoopbackChannel({ failSends: 1, now: () => clock.now() });
    const gateway = createGateway({ model, channels: { web: channel }, clock, logger: silentLogger });
    await gateway.start();
    const say = async (id: string, text: string) => {
      await gateway.receive({ session: "web:n", channel: "web", text, id });
      await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    };

    await say("n1", "What is the migration plan?"); // strands, is marked, recovered by a resend
    await say("n2", "Thanks. Is it done?");
    await gateway.stop();

    expect(contexts).toHaveLength(2);
    const later = contexts[1]!;
    const finalAt = later.findIndex((message) => message.role === "assistant" && message.text === LONG);
    expect(finalAt).toBeGreaterThan(0);
    expect(later[finalAt + 1]).toEqual({ role: "note", text: expect.stringMatching(/never shown/) });
    expect(later[finalAt + 2]).toEqual({ role: "note", text: expect.stringMatching(/delivered .*later/) });
    expect(later.at(-1)).toMatchObject({ role: "user", text: "Thanks. Is it done?" });
    expect(channel.sent.filter((sent) => sent.ok).map((sent) => sent.kind)).toEqual(["recovery", "reply"]);
  });
});
