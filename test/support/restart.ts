import { expect } from "vitest";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import type { PersistedSession } from "../../src/policy/plan-resume.js";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { LONG, MARKER, RECOVERED } from "./delivery.js";
import { type StoredRecord, transcript } from "./scenario.js";

// What the restart scenario tests share: the events after a restart, the lane priority of the turns
// it resumed, the checks that every message is answered once and every tool call closed, and a store
// seeded as a process that died would have left it.

/** Events after the (first) restart. */
export function afterRestart(result: ScenarioResult) {
  const at = result.events.findIndex((event) => event.type === "process.restarted");
  expect(at, "a restart happened").toBeGreaterThanOrEqual(0);
  return result.events.slice(at + 1);
}

/** Priority of the lane entry of each turn of `session` that started after the restart, in order. */
export function priorityOfTurnsAfterRestart(result: ScenarioResult, session: string): unknown[] {
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
export function runOfTurn(result: ScenarioResult, turn: number, session?: string): string {
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
export function expectAnsweredOnceEach(result: ScenarioResult, session: string, messageIds: string[]): void {
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
export function expectEveryToolCallClosed(records: StoredRecord[]): void {
  for (const [index, record] of records.entries()) {
    if (record.role !== "toolCall") continue;
    const results = records.filter((other) => other.role === "toolResult" && other.callId === record.callId);
    expect(results, `results of ${record.callId}`).toHaveLength(1);
    expect(records.indexOf(results[0]!)).toBeGreaterThan(index);
  }
}

export function expectSeqIncreasing(records: StoredRecord[]): void {
  const seqs = records.map((record) => record.seq ?? 0);
  expect(seqs).toEqual(seqs.map((_, index) => index + 1));
}

export const EMPTY_SCENARIO = `
name: a process that only resumes
model:
  - reply: { delayMs: 100, text: "Resumed: {{latestUser}}" }
channels:
  telegram: {}
`;

/**
 * What a first process left of a stranded final it recovered (telegram:7, run `telegram:7#1`): the
 * question, the undelivered answer, its marker, and the proof that the recovery reached the user.
 */
export function recoveredFinal(): Parameters<JsonlStore["append"]>[1] {
  return [
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
  ];
}

/** Writes a store as a process that died would have left it. */
export async function seed(
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
