import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/loopback-channel.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/adapters/model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { DELIVERY_INTENT, type TranscriptRecord } from "../../src/adapters/store.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelMessage } from "../../src/policy/turn-context.js";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import { eventsOf } from "../support/scenario.js";

// Delivery and the undelivered-final marker end to end (docs/architecture.md, invariant 6), through the
// scenario runner on a simulated clock, asserting on the JSON output of docs/scenarios.md.

const MARKER = "tiller.undelivered-final";
const RECOVERED = "tiller.recovered";

/** Substantive: ≥ 280 characters. */
const LONG =
  "Here is the migration plan. First, freeze writes to the legacy table for the duration of the copy. " +
  "Second, copy the rows in batches of ten thousand and verify the checksums after each batch. Third, " +
  "switch the readers to the new table and keep the old one for a week before dropping it.";
/** Between 120 and 280 characters with two sentences: substantive. */
const MEDIUM_TWO_SENTENCES =
  "The nightly export failed because the disk on the reporting host is full. " +
  "I cleared the old archives and the next export will run at midnight as usual.";
/** Between 120 and 280 characters in one sentence: not substantive. */
const MEDIUM_ONE_SENTENCE =
  "The nightly export failed because the disk on the reporting host is full and the old archives " +
  "from last spring were never rotated away";
/** Under 120 characters. */
const SHORT = "Done: the orders table is migrated.";

type StoredRecord = Partial<TranscriptRecord>;

async function play(yaml: string): Promise<ScenarioResult> {
  const { result } = await runScenario(parseScenario(yaml, "x.yaml"));
  return result;
}

/** One session, one inbound message, a model that answers `text` after 500 ms. */
function strandScenario(options: {
  text: string;
  channel?: string;
  visibleReplies?: "auto" | "message_tool";
  extraRules?: string;
}): string {
  return `
name: a final that may strand
config:
  delivery: { visibleReplies: ${options.visibleReplies ?? "auto"} }
model:
${options.extraRules ?? ""}
  - reply: { delayMs: 500, text: ${JSON.stringify(options.text)} }
channels:
  telegram: ${options.channel ?? "{}"}
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
`;
}

function transcript(result: ScenarioResult, session = "telegram:7"): StoredRecord[] {
  return result.transcripts[session] ?? [];
}

function customs(records: StoredRecord[], customType: string): StoredRecord[] {
  return records.filter((record) => record.role === "custom" && record.customType === customType);
}

/** The run id of the n-th turn (1-based, in the order turns began); run ids themselves are opaque. */
function runOfTurn(result: ScenarioResult, turn: number): string {
  const ids: string[] = [];
  for (const event of result.events) {
    if (event.type !== "turn.started" && event.type !== "turn.ended") continue;
    if (!ids.includes(String(event.runId))) ids.push(String(event.runId));
  }
  const id = ids[turn - 1];
  if (id === undefined) throw new Error(`no turn ${turn} (turns: ${ids.join(", ")})`);
  return id;
}

function eventIndex(result: ScenarioResult, type: string): number {
  return result.events.findIndex((event) => event.type === type);
}

function deliveriesOf(result: ScenarioResult, kind: string) {
  return result.deliveries.filter((delivery) => delivery.kind === kind);
}

/**
 * The assistant record of `runId` is followed directly by exactly one marker that points at it, and the
 * transcript holds no other marker.
 */
function expectMarkedOnce(
  records: StoredRecord[],
  runId: string,
  deliveryMode: "automatic" | "message_tool_only",
): StoredRecord {
  const finalIndex = records.findIndex((record) => record.role === "assistant" && record.runId === runId);
  const final = records[finalIndex];
  expect(final, `assistant record of ${runId}`).toMatchObject({ role: "assistant", delivered: false });
  expect(final).not.toHaveProperty("deliveryMessageId");
  const markers = customs(records, MARKER);
  expect(markers).toHaveLength(1);
  const marker = records[finalIndex + 1];
  expect(marker).toBe(markers[0]);
  expect(marker).toMatchObject({ role: "custom", customType: MARKER, display: false });
  expect(marker?.role === "custom" ? marker.details : undefined).toEqual({
    deliveryMode,
    delivered: false,
    finalSeq: final?.seq,
    finalTextLength: final?.role === "assistant" ? (final.text ?? "").length : -1,
  });
  expect(marker?.seq).toBeGreaterThan(final?.seq ?? 0);
  return final!;
}

/** marker.appended (durable) comes before recovery.queued, each exactly once (invariant 6). */
function expectMarkerBeforeRecovery(result: ScenarioResult): void {
  expect(eventsOf(result, "marker.appended")).toHaveLength(1);
  expect(eventsOf(result, "recovery.queued")).toHaveLength(1);
  expect(eventIndex(result, "marker.appended")).toBeGreaterThanOrEqual(0);
  expect(eventIndex(result, "marker.appended")).toBeLessThan(eventIndex(result, "recovery.queued"));
}

function expectNoCrash(result: ScenarioResult): void {
  expect(eventsOf(result, "session.crashed")).toEqual([]);
  expect(eventsOf(result, "state.saveFailed")).toEqual([]);
}

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
    const final = expectMarkedOnce(records, runOfTurn(result, 1), "automatic") as { deliveryId?: string };
    // The final's intent is durable before the send; the assistant record is its receipt.
    expect(final).toMatchObject({ text: LONG, seq: 3, deliveryId: `reply:${records[1]?.id}` });
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      DELIVERY_INTENT,
      "assistant",
      MARKER,
      DELIVERY_INTENT,
      RECOVERED,
    ]);
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
    const records = transcript(result);
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
    const records = transcript(result);
    expect(records.at(-1)).toMatchObject({ role: "assistant", delivered: true, deliveryMessageId: "out-1" });
    expect(customs(records, MARKER)).toEqual([]);
    expect(eventsOf(result, "recovery.queued")).toEqual([]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["reply", LONG]]);
  });

  it("resends a short stranded final once too: a network error never ends in silence", async () => {
    const result = await play(strandScenario({ text: SHORT, channel: "{ failSends: 1 }" }));
    const records = transcript(result);
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
      expectMarkedOnce(transcript(result), runOfTurn(result, 1), "automatic");
      expectMarkerBeforeRecovery(result);
      expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
        ["recovery", text],
      ]);
    }
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
    const records = transcript(result);
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
    const records = transcript(result);
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
    const records = transcript(result);
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
    const directRecords = transcript(direct);
    const followupRecords = transcript(followup);
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
    const records = transcript(result);
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
