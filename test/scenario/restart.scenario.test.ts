import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { DELIVERY_INTENT, type TranscriptRecord } from "../../src/adapters/store.js";
import type { PersistedSession } from "../../src/policy/plan-resume.js";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import { eventsOf } from "../support/scenario.js";

// Restarts (`restart: [{ at }]`: every in-process timer and promise dies, a new gateway starts on the
// same store) at several points of a turn's life (docs/store.md, invariants 5 and 6): every accepted
// message is answered exactly once, no marker or recovery is duplicated, and the turn a restart cut off
// runs again in the background lane.

const MARKER = "tiller.undelivered-final";
const RECOVERED = "tiller.recovered";
const LONG =
  "Here is the migration plan. First, freeze writes to the legacy table for the duration of the copy. " +
  "Second, copy the rows in batches of ten thousand and verify the checksums after each batch. Third, " +
  "switch the readers to the new table and keep the old one for a week before dropping it.";

type StoredRecord = Partial<TranscriptRecord>;

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tiller-restart-"));
  dirs.push(dir);
  return dir;
}

async function play(yaml: string, storeDir?: string): Promise<ScenarioResult> {
  const { result } = await runScenario(parseScenario(yaml, "x.yaml"), storeDir ? { storeDir } : {});
  return result;
}

function transcript(result: ScenarioResult, session: string): StoredRecord[] {
  return result.transcripts[session] ?? [];
}

function customs(records: StoredRecord[], customType: string): StoredRecord[] {
  return records.filter((record) => record.role === "custom" && record.customType === customType);
}

/** Events after the (first) restart. */
function afterRestart(result: ScenarioResult) {
  const at = result.events.findIndex((event) => event.type === "process.restarted");
  expect(at, "a restart happened").toBeGreaterThanOrEqual(0);
  return result.events.slice(at + 1);
}

/** Priority of the lane entry of each turn of `session` that started after the restart, in order. */
function priorityOfTurnsAfterRestart(result: ScenarioResult, session: string): unknown[] {
  const events = afterRestart(result).filter((event) => event.session === session);
  const priorities: unknown[] = [];
  let priority: unknown;
  for (const event of events) {
    if (event.type === "lane.enqueued") priority = event.priority;
    if (event.type === "turn.started") priorities.push(priority);
  }
  return priorities;
}

/** The run id of the n-th turn (1-based, in the order turns began); run ids themselves are opaque. */
function runOfTurn(result: ScenarioResult, turn: number, session?: string): string {
  const ids: string[] = [];
  for (const event of result.events) {
    if (event.type !== "turn.started" && event.type !== "turn.ended") continue;
    if (session !== undefined && event.session !== session) continue;
    if (!ids.includes(String(event.runId))) ids.push(String(event.runId));
  }
  const id = ids[turn - 1];
  if (id === undefined) throw new Error(`no turn ${turn} (turns: ${ids.join(", ")})`);
  return id;
}

/**
 * Each message is stored once as a user record, and answered once: exactly one delivered assistant
 * record follows it before the next user record (one turn per message, the modes used here), and one
 * reply delivery carries that text.
 */
function expectAnsweredOnceEach(result: ScenarioResult, session: string, messageIds: string[]): void {
  const records = transcript(result, session);
  const users = records.flatMap((record) => (record.role === "user" ? [record.messageId] : []));
  expect(users).toEqual(messageIds);
  const talk = records.filter((record) => record.role === "user" || record.role === "assistant");
  expect(talk.map((record) => record.role)).toEqual(messageIds.flatMap(() => ["user", "assistant"]));
  const finals = talk.filter((record) => record.role === "assistant");
  for (const final of finals) expect(final).toMatchObject({ delivered: true });
  const replies = result.deliveries.filter(
    (delivery) => delivery.session === session && delivery.kind === "reply",
  );
  expect(replies.map((reply) => reply.text)).toEqual(
    finals.map((final) => final.role === "assistant" && final.text),
  );
  expect(new Set(finals.map((final) => final.role === "assistant" && final.runId)).size).toBe(finals.length);
}

/** Every tool call has exactly one result, after it. */
function expectEveryToolCallClosed(records: StoredRecord[]): void {
  for (const [index, record] of records.entries()) {
    if (record.role !== "toolCall") continue;
    const results = records.filter((other) => other.role === "toolResult" && other.callId === record.callId);
    expect(results, `results of ${record.callId}`).toHaveLength(1);
    expect(records.indexOf(results[0]!)).toBeGreaterThan(index);
  }
}

function expectSeqIncreasing(records: StoredRecord[]): void {
  const seqs = records.map((record) => record.seq ?? 0);
  expect(seqs).toEqual(seqs.map((_, index) => index + 1));
}

function expectNoCrash(result: ScenarioResult): void {
  expect(eventsOf(result, "session.crashed")).toEqual([]);
  expect(eventsOf(result, "state.saveFailed")).toEqual([]);
}

describe("a restart cuts a turn off", () => {
  it("runs a turn cut off mid model call again, in the background lane, and answers its message once", async () => {
    const result = await play(`
name: kill -9 while the model streams
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "How many open tickets are there?" }
restart:
  - { at: 500 }
`);
    expect(eventsOf(result, "session.resumed")).toEqual([
      expect.objectContaining({
        session: "web:a",
        note: expect.stringContaining(`${runOfTurn(result, 1)} was cut off`),
      }),
    ]);
    expect(priorityOfTurnsAfterRestart(result, "web:a")).toEqual(["background"]);
    expectAnsweredOnceEach(result, "web:a", ["m1"]);
    expect(result.deliveries).toEqual([
      expect.objectContaining({
        at: 1500,
        kind: "reply",
        runId: runOfTurn(result, 2),
        text: "Re: How many open tickets are there?",
      }),
    ]);
    // The cut-off call and the one of the resumed turn; the message was stored once, before the first.
    expect(result.modelCalls.map((call) => [call.runId, call.latestUser])).toEqual([
      [runOfTurn(result, 1), "How many open tickets are there?"],
      [runOfTurn(result, 2), "How many open tickets are there?"],
    ]);
    // The resumed turn shows the model its stored message as this turn's, not as history (docs/scenarios.md).
    expect(result.modelCalls.map((call) => call.userTexts)).toEqual([
      ["How many open tickets are there?"],
      ["How many open tickets are there?"],
    ]);
    expectNoCrash(result);
  });

  it("closes the tool call a restart cut off with a synthetic result, then runs the turn again", async () => {
    const result = await play(await readFile("examples/06-restart-mid-tool.yaml", "utf8"));
    const records = transcript(result, "web:ops");
    expectEveryToolCallClosed(records);
    const cutCall = records.find(
      (record) => record.role === "toolCall" && record.runId === runOfTurn(result, 1),
    );
    expect(cutCall).toMatchObject({ name: "fetch_report", args: { id: 42 } });
    const synthetic = records.find(
      (record) =>
        record.role === "toolResult" && cutCall?.role === "toolCall" && record.callId === cutCall.callId,
    );
    expect(synthetic).toMatchObject({ status: "cancelled", runId: runOfTurn(result, 2) });
    expect(synthetic?.role === "toolResult" && String(synthetic.result)).toMatch(/restart/);
    // The synthetic result comes before anything of the resumed turn.
    expect(records.indexOf(synthetic!)).toBe(records.indexOf(cutCall!) + 1);
    expect(priorityOfTurnsAfterRestart(result, "web:ops")).toEqual(["background"]);
    expectAnsweredOnceEach(result, "web:ops", ["r1"]);
    expect(result.toolCalls.map((call) => [call.runId, call.status])).toEqual([
      [runOfTurn(result, 2), "done"],
    ]);
    expectSeqIncreasing(records);
    expectNoCrash(result);
  });

  it("runs follow-ups queued behind a cut-off turn once each, in order, after the resumed turn", async () => {
    const result = await play(`
name: kill -9 with follow-ups waiting
config:
  queue: { mode: followup }
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "first question" }
  - { at: 200, session: "web:a", channel: web, id: m2, text: "second question" }
  - { at: 300, session: "web:a", channel: web, id: m3, text: "third question" }
  - { at: 2000, session: "web:a", channel: web, id: m4, text: "fourth question" }
restart:
  - { at: 500 }
`);
    expect(result.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["m1", "started"],
      ["m2", "queued"],
      ["m3", "queued"],
      ["m4", "queued"],
    ]);
    expectAnsweredOnceEach(result, "web:a", ["m1", "m2", "m3", "m4"]);
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual([
      "Re: first question",
      "Re: second question",
      "Re: third question",
      "Re: fourth question",
    ]);
    // Only the cut-off turn was resumed; it waited in the background lane.
    expect(eventsOf(result, "session.resumed")).toHaveLength(1);
    expect(priorityOfTurnsAfterRestart(result, "web:a")[0]).toBe("background");
    expect(result.modelCalls.map((call) => call.latestUser)).toEqual([
      "first question",
      "first question",
      "second question",
      "third question",
      "fourth question",
    ]);
    expectNoCrash(result);
  });

  it("answers messages collected before a restart in one turn after it, with those collected later", async () => {
    const result = await play(`
name: kill -9 during a collect window
config:
  queue: { mode: collect, debounceMs: 1000 }
model:
  - reply: { delayMs: 300, text: "Seen: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "first" }
  - { at: 100, session: "web:a", channel: web, id: m2, text: "second" }
  - { at: 500, session: "web:a", channel: web, id: m3, text: "third" }
  - { at: 700, session: "web:a", channel: web, id: m4, text: "fourth" }
restart:
  - { at: 600 }
`);
    expect(result.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["m1", "started"],
      ["m2", "collected"],
      ["m3", "collected"],
      ["m4", "collected"],
    ]);
    const records = transcript(result, "web:a");
    expect(records.flatMap((record) => (record.role === "user" ? [record.messageId] : []))).toEqual([
      "m1",
      "m2",
      "m3",
      "m4",
    ]);
    // m1's own turn, then one turn for the whole burst, which saw every message of it.
    const burstCall = result.modelCalls.at(-1);
    expect(burstCall?.userTexts).toEqual(["second", "third", "fourth"]);
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual(["Seen: first", "Seen: fourth"]);
    expect(records.filter((record) => record.role === "assistant")).toHaveLength(2);
    expectNoCrash(result);
  });

  it("does not lose a message whose turn a second restart cuts off after the first restart found the session idle", async () => {
    const result = await play(`
name: two restarts, the second mid-turn
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "one" }
  - { at: 2000, session: "web:a", channel: web, id: m2, text: "two" }
restart:
  - { at: 1000 }
  - { at: 2100 }
`);
    expect(eventsOf(result, "process.restarted")).toHaveLength(2);
    expectAnsweredOnceEach(result, "web:a", ["m1", "m2"]);
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual(["Re: one", "Re: two"]);
    expectNoCrash(result);
  });

  it("acknowledges a message redelivered after a restart as a duplicate and answers it once", async () => {
    const result = await play(`
name: the channel redelivers after kill -9
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "first question" }
  - { at: 600, session: "web:a", channel: web, id: m1, text: "first question" }
  - { at: 3000, session: "web:a", channel: web, id: m1, text: "first question" }
restart:
  - { at: 500 }
`);
    expect(result.acks.map((ack) => [ack.at, ack.messageId, ack.disposition])).toEqual([
      [0, "m1", "started"],
      [600, "m1", "duplicate"],
      [3000, "m1", "duplicate"],
    ]);
    expectAnsweredOnceEach(result, "web:a", ["m1"]);
    expectNoCrash(result);
  });
});

describe("a restart meets a stranded reply", () => {
  it("runs a recovery that waited for its lane at the restart once, with no second marker", async () => {
    const result = await play(`
name: kill -9 while the recovery waits for a lane slot
config:
  lanes: { main: 1 }
model:
  - when: { session: "web:busy" }
    reply: { delayMs: 2000, text: "Busy answer." }
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: { failSends: 1 }
  web: {}
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
  - { at: 100, session: "web:busy", channel: web, id: b1, text: "Run the long job" }
restart:
  - { at: 1000 }
`);
    const records = transcript(result, "telegram:7");
    expect(customs(records, MARKER)).toEqual([
      expect.objectContaining({
        // seq 2 is the final's delivery intent, seq 3 the final (its receipt).
        details: expect.objectContaining({ finalSeq: 3, deliveryMode: "automatic" }),
      }),
    ]);
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({
          strandedRunId: runOfTurn(result, 1, "telegram:7"),
          recovered: true,
        }),
      }),
    ]);
    expect(eventsOf(result, "marker.appended")).toHaveLength(1);
    expect(eventsOf(result, "recovery.queued")).toHaveLength(1);
    expect(
      eventsOf(result, "session.resumed")
        .map((event) => event.session)
        .sort(),
    ).toEqual(["telegram:7", "web:busy"]);
    const recoveries = result.deliveries.filter((delivery) => delivery.kind === "recovery");
    expect(recoveries.map((delivery) => [delivery.session, delivery.text])).toEqual([["telegram:7", LONG]]);
    // The long job, cut off mid model call, ran again and was answered once.
    expect(priorityOfTurnsAfterRestart(result, "web:busy")).toEqual(["background"]);
    expectAnsweredOnceEach(result, "web:busy", ["b1"]);
    expectNoCrash(result);
  });

  it("runs a message_tool recovery cut off mid model call again once: one marker, one send", async () => {
    const result = await play(`
name: kill -9 during the recovery turn
config:
  delivery: { visibleReplies: message_tool }
model:
  - when: { recovery: true, call: 1 }
    reply: { delayMs: 400, toolCalls: [{ name: message, args: { action: send, text: "Recovered plan: freeze, copy, verify, switch." } }] }
  - when: { recovery: true }
    reply: { delayMs: 10, text: "" }
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: {}
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
restart:
  - { at: 700 }
`);
    const records = transcript(result, "telegram:7");
    expect(customs(records, MARKER)).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({ finalSeq: 2, deliveryMode: "message_tool_only" }),
      }),
    ]);
    expect(customs(records, RECOVERED)).toHaveLength(1);
    expect(eventsOf(result, "marker.appended")).toHaveLength(1);
    expect(eventsOf(result, "session.resumed")).toEqual([
      expect.objectContaining({ note: expect.stringContaining(`recovery of ${runOfTurn(result, 1)}`) }),
    ]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", "Recovered plan: freeze, copy, verify, switch."],
    ]);
    expect(result.deliveries.some((delivery) => delivery.text === LONG)).toBe(false);
    expect(records.filter((record) => record.role === "assistant")).toHaveLength(1);
    expectEveryToolCallClosed(records);
    expectNoCrash(result);
  });

  it("marks and recovers once a stranded final whose turn a restart cut off just before it was due", async () => {
    const result = await play(`
name: kill -9 at the moment the final is due
model:
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: { failSends: 1 }
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
restart:
  - { at: 500 }
`);
    const records = transcript(result, "telegram:7");
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      DELIVERY_INTENT,
      "assistant",
      MARKER,
      DELIVERY_INTENT,
      RECOVERED,
    ]);
    expect(records[2]).toMatchObject({ runId: runOfTurn(result, 2), delivered: false });
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["recovery", LONG]]);
    expect(eventsOf(result, "recovery.queued")).toHaveLength(1);
    expectNoCrash(result);
  });
});

describe("a JSONL store outlives the process", () => {
  it("continues the transcript in a second run on the same store and re-runs nothing of the first", async () => {
    const dir = await tempDir();
    const first = await play(
      `
name: first process
config:
  queue: { mode: followup }
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "one" }
  - { at: 100, session: "web:a", channel: web, id: m2, text: "two" }
`,
      dir,
    );
    const firstRecords = transcript(first, "web:a");
    expectAnsweredOnceEach(first, "web:a", ["m1", "m2"]);

    const second = await play(
      `
name: second process
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m3, text: "three" }
  - { at: 1000, session: "web:a", channel: web, id: m2, text: "two" }
`,
      dir,
    );
    // The channel redelivers a message the first process answered: a duplicate, not a second answer.
    expect(second.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["m3", "started"],
      ["m2", "duplicate"],
    ]);
    const records = transcript(second, "web:a");
    // The first run's records are kept as they were; the second run appends after them.
    expect(records.slice(0, firstRecords.length)).toEqual(firstRecords);
    expectSeqIncreasing(records);
    expect(records.length).toBe(firstRecords.length + 3);
    expect(records.slice(firstRecords.length)).toEqual([
      expect.objectContaining({ role: "user", messageId: "m3" }),
      expect.objectContaining({ role: "custom", customType: DELIVERY_INTENT }),
      expect.objectContaining({ role: "assistant", text: "Re: three", delivered: true }),
    ]);
    // Nothing of the first run is resumed or answered again.
    expect(eventsOf(second, "session.resumed")).toEqual([]);
    expect(second.modelCalls.map((call) => call.latestUser)).toEqual(["three"]);
    expect(second.deliveries.map((delivery) => delivery.text)).toEqual(["Re: three"]);
    // Each turn of either process has its own run id.
    const runIds = records.flatMap((record) => (record.role === "assistant" ? [record.runId] : []));
    expect(new Set(runIds).size).toBe(3);
    expectNoCrash(second);
  });

  it("hands messages due while a restarted process starts to that process, on a JSONL store as in memory", async () => {
    const yaml = `
name: inbound right after a restart
config: { queue: { mode: followup } }
model: [ { reply: { delayMs: 100, text: "Re: {{latestUser}}" } } ]
channels: { web: {} }
inbound:
  - { at: 0, session: s, channel: web, id: m1, text: "one" }
  - { at: 10, session: s, channel: web, id: m2, text: "two" }
  - { at: 51, session: s, channel: web, id: m3, text: "three" }
  - { at: 52, session: t, channel: web, id: n1, text: "other session" }
restart: [ { at: 50 } ]
`;
    const replies = (result: ScenarioResult) =>
      result.deliveries.filter((delivery) => delivery.kind === "reply").map((delivery) => delivery.text);
    const inMemory = await play(yaml);
    const onDisk = await play(yaml, await tempDir());
    expect(replies(inMemory).sort()).toEqual(["Re: one", "Re: other session", "Re: three", "Re: two"]);
    expect(replies(onDisk)).toEqual(replies(inMemory));
    expect(onDisk.acks).toEqual(inMemory.acks);
  });

  it("resumes on a JSONL store a turn cut off mid-tool, leaving only whole lines on disk", async () => {
    const dir = await tempDir();
    const result = await play(await readFile("examples/06-restart-mid-tool.yaml", "utf8"), dir);
    const records = transcript(result, "web:ops");
    expectEveryToolCallClosed(records);
    expectAnsweredOnceEach(result, "web:ops", ["r1"]);
    expectSeqIncreasing(records);
    expect(priorityOfTurnsAfterRestart(result, "web:ops")).toEqual(["background"]);

    const files = await readdir(dir);
    const transcripts = files.filter((name) => name.endsWith(".jsonl"));
    expect(transcripts).toHaveLength(1);
    const text = await readFile(join(dir, transcripts[0]!), "utf8");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.trimEnd().split("\n");
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const stored = lines.map((line) => JSON.parse(line) as { seq?: number }).filter((line) => line.seq);
    expect(stored.map((line) => line.seq)).toEqual(records.map((record) => record.seq));
    // Nothing is pending any more: the resume state is gone.
    expect(files.filter((name) => name.endsWith(".state.json"))).toEqual([]);
  });

  it("appends the marker a crash cut off between the final and its marker, then recovers once", async () => {
    const dir = await tempDir();
    await seed(
      dir,
      "telegram:7",
      [
        { role: "user", text: "How do we migrate the orders table?", messageId: "p1", channel: "telegram" },
        { role: "assistant", text: LONG, runId: "telegram:7#1", delivered: false },
      ],
      {
        version: 1,
        turnSeq: 1,
        runId: "telegram:7#1",
        pending: {
          kind: "turn",
          messages: [{ id: "p1", text: "How do we migrate the orders table?", channel: "telegram", at: 0 }],
          summaries: [],
        },
        queue: [],
        summaries: [],
      },
    );
    const result = await play(EMPTY_SCENARIO, dir);
    const records = transcript(result, "telegram:7");
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      "assistant",
      MARKER,
      DELIVERY_INTENT,
      RECOVERED,
    ]);
    expect(records[2]).toMatchObject({
      display: false,
      details: { deliveryMode: "automatic", delivered: false, finalSeq: 2, finalTextLength: LONG.length },
    });
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["recovery", LONG]]);
    // The final is not produced again.
    expect(result.modelCalls).toEqual([]);
    expect(eventsOf(result, "session.resumed").map((event) => event.note)).toEqual([
      expect.stringContaining("marker appended"),
      expect.stringContaining("recovery of telegram:7#1 queued"),
    ]);

    // A third process finds nothing left to do: no second marker, no second recovery.
    const again = await play(EMPTY_SCENARIO, dir);
    expect(transcript(again, "telegram:7")).toEqual(records);
    expect(again.deliveries).toEqual([]);
  });

  it("marks and recovers a new stranded final even when an older final with the same run id was recovered", async () => {
    // Run ids may repeat in a transcript (numbered per process in older stores, or a custom newRunId).
    const dir = await tempDir();
    const second = "And how do we roll it back?";
    await seed(
      dir,
      "telegram:7",
      [
        { role: "user", text: "How do we migrate the orders table?", messageId: "p1", channel: "telegram" },
        { role: "assistant", text: LONG, runId: "telegram:7#1", delivered: false },
        {
          role: "custom",
          customType: MARKER,
          display: false,
          details: { deliveryMode: "automatic", delivered: false, finalSeq: 2, finalTextLength: LONG.length },
        },
        {
          role: "custom",
          customType: RECOVERED,
          display: false,
          details: { strandedRunId: "telegram:7#1", recovered: true, messageId: "out-1" },
        },
        { role: "user", text: second, messageId: "p2", channel: "telegram" },
        { role: "assistant", text: `Rollback: ${LONG}`, runId: "telegram:7#1", delivered: false },
      ],
      {
        version: 1,
        turnSeq: 1,
        runId: "telegram:7#1",
        pending: {
          kind: "turn",
          messages: [{ id: "p2", text: second, channel: "telegram", at: 0 }],
          summaries: [],
        },
        queue: [],
        summaries: [],
      },
    );
    const result = await play(EMPTY_SCENARIO, dir);
    const records = transcript(result, "telegram:7");
    expect(records.slice(6)).toEqual([
      expect.objectContaining({ customType: MARKER, details: expect.objectContaining({ finalSeq: 6 }) }),
      expect.objectContaining({
        customType: DELIVERY_INTENT,
        details: expect.objectContaining({ kind: "recovery" }),
      }),
      expect.objectContaining({
        customType: RECOVERED,
        details: expect.objectContaining({ recovered: true }),
      }),
    ]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", `Rollback: ${LONG}`],
    ]);
    expect(result.modelCalls).toEqual([]);
  });

  it("does not run a recovery again when its tiller.recovered proof is stored", async () => {
    const dir = await tempDir();
    await seed(
      dir,
      "telegram:7",
      [
        { role: "user", text: "How do we migrate the orders table?", messageId: "p1", channel: "telegram" },
        { role: "assistant", text: LONG, runId: "telegram:7#1", delivered: false },
        {
          role: "custom",
          customType: MARKER,
          display: false,
          details: { deliveryMode: "automatic", delivered: false, finalSeq: 2, finalTextLength: LONG.length },
        },
        {
          role: "custom",
          customType: RECOVERED,
          display: false,
          details: { strandedRunId: "telegram:7#1", recovered: true, messageId: "out-1" },
        },
      ],
      {
        version: 1,
        turnSeq: 2,
        runId: "telegram:7#2",
        pending: {
          kind: "recovery",
          messages: [],
          summaries: [],
          recovery: {
            kind: "recovery",
            text: LONG,
            strandedRunId: "telegram:7#1",
            deliveryMode: "automatic",
          },
        },
        queue: [],
        summaries: [],
      },
    );
    const result = await play(EMPTY_SCENARIO, dir);
    expect(result.deliveries).toEqual([]);
    expect(customs(transcript(result, "telegram:7"), MARKER)).toHaveLength(1);
    expect(customs(transcript(result, "telegram:7"), RECOVERED)).toHaveLength(1);
    expect(eventsOf(result, "session.resumed")).toEqual([]);
  });
});

const EMPTY_SCENARIO = `
name: a process that only resumes
model:
  - reply: { delayMs: 100, text: "Resumed: {{latestUser}}" }
channels:
  telegram: {}
`;

/** Writes a store as a process that died would have left it. */
async function seed(
  dir: string,
  session: string,
  records: Parameters<JsonlStore["append"]>[1],
  state: PersistedSession,
): Promise<void> {
  const store = await JsonlStore.openDir({ dir, now: () => 0 });
  const head = await store.open(session);
  await store.append(session, records, head);
  await store.saveState(session, state);
  await store.close();
}
