import { expect } from "vitest";
import type { ScenarioResult } from "../../src/scenario/runner.js";

// What the re-check scenario tests share (docs/recheck.md): turns by number, the re-check events of a
// scenario, and the checks that every message is acked once and shown to exactly one run.

/** Turn number (1, 2, ... in the order turns started) of a run id; run ids themselves are opaque. */
export function turnOf(result: ScenarioResult, runId: unknown): number {
  const started = result.events.filter((event) => event.type === "turn.started").map((event) => event.runId);
  const index = started.indexOf(runId as string);
  if (index < 0) throw new Error(`no turn.started for run ${String(runId)}`);
  return index + 1;
}

export function runOfTurn(result: ScenarioResult, turn: number): string {
  const started = result.events.filter((event) => event.type === "turn.started");
  return String(started[turn - 1]?.runId);
}

export function callsOfTurn(result: ScenarioResult, turn: number) {
  return result.modelCalls.filter((call) => call.runId === runOfTurn(result, turn));
}

export function rechecks(result: ScenarioResult) {
  return result.events
    .filter((event) => event.type === "recheck.fired" || event.type === "recheck.skipped")
    .map((event) => ({ type: event.type, reason: event.reason, turn: turnOf(result, event.runId) }));
}

export function replies(result: ScenarioResult) {
  return result.deliveries.filter((delivery) => delivery.kind === "reply");
}

/** Every inbound message has exactly one ack, with text a person can read (docs/scenarios.md). */
export function expectOneReadableAckEach(result: ScenarioResult, messageIds: string[]): void {
  expect(result.acks.map((ack) => ack.messageId).sort()).toEqual([...messageIds].sort());
  for (const ack of result.acks) {
    expect(ack.text.trim().length).toBeGreaterThan(5);
    expect(ack.text).toMatch(/^[A-Z][^\n]*[.!?]$/);
    expect(ack.text).not.toMatch(/undefined|null|NaN|\[object/);
  }
  const ackEvents = result.events
    .filter((event) => event.type === "message.acked")
    .map((event) => event.messageId);
  expect(ackEvents.sort()).toEqual([...messageIds].sort());
}

/** Each user message is stored once in its session's transcript, and shown as new to exactly one run. */
export function expectEachMessageOnce(result: ScenarioResult, session: string, messageIds: string[]): void {
  const stored = (result.transcripts[session] ?? []).flatMap((record) =>
    record.role === "user" ? [record.messageId] : [],
  );
  expect([...stored].sort()).toEqual([...messageIds].sort());
  const runsSeeing = new Map<string, Set<string>>();
  for (const event of result.events) {
    if (event.type !== "model.called" || event.session !== session) continue;
    for (const id of (event.messageIds as string[] | undefined) ?? []) {
      const runs = runsSeeing.get(id) ?? new Set<string>();
      runs.add(String(event.runId));
      runsSeeing.set(id, runs);
    }
  }
  for (const id of messageIds) expect([...(runsSeeing.get(id) ?? [])], `runs that saw ${id}`).toHaveLength(1);
}
