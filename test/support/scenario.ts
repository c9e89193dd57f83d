import { expect } from "vitest";
import type { TillerEvent, TillerEventType } from "../../src/events.js";
import type { TranscriptRecord } from "../../src/ports/store.js";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";

// What the scenario tests share: playing a scenario text and reading its JSON output.

/** A transcript record as the scenario output holds it. */
export type StoredRecord = Partial<TranscriptRecord>;

/** Plays a scenario given as YAML (on a JSONL store at `storeDir`, else in memory). */
export async function play(yaml: string, storeDir?: string): Promise<ScenarioResult> {
  const { result } = await runScenario(parseScenario(yaml, "x.yaml"), storeDir ? { storeDir } : {});
  return result;
}

export function transcript(result: ScenarioResult, session: string): StoredRecord[] {
  return result.transcripts[session] ?? [];
}

/** The hidden records of one custom type (markers, recovery proofs). */
export function customs(records: StoredRecord[], customType: string): StoredRecord[] {
  return records.filter((record) => record.role === "custom" && record.customType === customType);
}

/** The events named `type`, typed by the event map. */
export function eventsOf<K extends TillerEventType>(result: ScenarioResult, type: K) {
  return result.events.filter((event): event is Extract<TillerEvent, { type: K }> => event.type === type);
}

/**
 * The run id of the n-th turn (1-based, in the order turns began or ended, of `session` if given);
 * run ids themselves are opaque.
 */
export function runOfTurn(result: ScenarioResult, turn: number, session?: string): string {
  const ids: string[] = [];
  for (const event of result.events) {
    if (event.type !== "turn.started" && event.type !== "turn.ended") continue;
    if (session !== undefined && event.session !== session) continue;
    if (!ids.includes(event.runId)) ids.push(event.runId);
  }
  const id = ids[turn - 1];
  if (id === undefined) throw new Error(`no turn ${turn} (turns: ${ids.join(", ")})`);
  return id;
}

/** The turns' answers that reached a channel (of `session` if given). */
export function replies(result: ScenarioResult, session?: string) {
  return result.deliveries.filter(
    (delivery) => delivery.kind === "reply" && (!session || delivery.session === session),
  );
}

/** No session crashed and no session state failed to save. */
export function expectNoCrash(result: ScenarioResult): void {
  expect(eventsOf(result, "session.crashed")).toEqual([]);
  expect(eventsOf(result, "state.saveFailed")).toEqual([]);
}
