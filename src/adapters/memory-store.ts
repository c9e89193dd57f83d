import { nanoid } from "nanoid";
import { assertSessionKey } from "../ports/session-key.js";
import type {
  ExpectedHead,
  RecordBody,
  ScheduleState,
  StoredCommitment,
  TranscriptHead,
  TranscriptRecord,
  TranscriptStore,
} from "../ports/store.js";
import { checkExpect, metaOf, stampRecords, stateJson, TranscriptLog } from "./jsonl/transcript-log.js";

/**
 * A transcript store held in memory, with the JSONL store's semantics (seq, revisions, rotation, stale
 * writers, JSON-normalized copies) and none of its I/O. Used by tests and the scenario runner.
 *
 * `close()` keeps the data: the instance plays the part of the disk, so a test can "restart" a gateway
 * on the same store and see what survived.
 *
 * @example
 * ```ts
 * const store = new MemoryStore({ now: () => clock.now() });
 * const head = await store.open("telegram:42");
 * await store.append("telegram:42", [{ role: "user", text: "hi", messageId: "m1" }], head);
 * (await store.readWindow("telegram:42")).length; // 1
 * ```
 */
export class MemoryStore implements TranscriptStore {
  private readonly now: () => number;
  private readonly logs = new Map<string, TranscriptLog>();
  /** JSON text: what loads is what a restart of a file store would see, and parsing is the copy. */
  private readonly states = new Map<string, string>();
  /** Commitments by id, as JSON text (the same copy semantics as states). */
  private readonly commitments = new Map<string, string>();
  private readonly schedules = new Map<string, string>();

  constructor(
    options: {
      /** Clock for record `at` stamps. @default `Date.now` */
      now?: () => number;
    } = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  async open(session: string): Promise<TranscriptHead> {
    assertSessionKey(session);
    let log = this.logs.get(session);
    if (!log) {
      log = new TranscriptLog(nanoid());
      this.logs.set(session, log);
    }
    return log.head();
  }

  async append(session: string, records: RecordBody[], expect: ExpectedHead): Promise<TranscriptRecord[]> {
    assertSessionKey(session);
    const log = this.logs.get(session);
    checkExpect(session, log, expect);
    // Stamp everything first: a body that fails validation leaves the transcript untouched.
    const stamped = stampRecords(records, log!.head(), this.now(), nanoid);
    for (const { record, json } of stamped) log!.push(json, metaOf(record));
    // The log keeps only the text, so these objects are the caller's own.
    return stamped.map(({ record }) => record);
  }

  async read(session: string): Promise<TranscriptRecord[]> {
    assertSessionKey(session);
    return this.logs.get(session)?.records() ?? [];
  }

  async readWindow(session: string): Promise<TranscriptRecord[]> {
    assertSessionKey(session);
    return this.logs.get(session)?.window() ?? [];
  }

  async reset(session: string, expect: ExpectedHead): Promise<TranscriptHead> {
    assertSessionKey(session);
    const log = this.logs.get(session);
    checkExpect(session, log, expect);
    log!.reset();
    return log!.head();
  }

  async rotate(session: string, expect: ExpectedHead): Promise<TranscriptHead> {
    assertSessionKey(session);
    const log = this.logs.get(session);
    checkExpect(session, log, expect);
    log!.rotate(log!.lastSeq);
    return log!.head();
  }

  async sessions(prefix?: string): Promise<string[]> {
    const keys = [...new Set([...this.logs.keys(), ...this.states.keys()])].sort();
    return prefix === undefined ? keys : keys.filter((key) => key.startsWith(prefix));
  }

  async saveState(session: string, state: unknown): Promise<void> {
    assertSessionKey(session);
    if (state === null) {
      this.states.delete(session);
      return;
    }
    this.states.set(session, stateJson(state));
  }

  async loadState(session: string): Promise<unknown | null> {
    assertSessionKey(session);
    const json = this.states.get(session);
    return json === undefined ? null : JSON.parse(json);
  }

  async saveCommitments(records: readonly StoredCommitment[]): Promise<void> {
    // Encode all first: one record JSON cannot carry leaves every record of the call unstored.
    const encoded = records.map((record) => [checkCommitmentId(record), stateJson(record)] as const);
    for (const [id, json] of encoded) this.commitments.set(id, json);
  }

  async loadCommitments(): Promise<StoredCommitment[]> {
    return [...this.commitments.values()].map((json) => JSON.parse(json) as StoredCommitment);
  }

  async saveSchedule(id: string, state: ScheduleState | null): Promise<void> {
    if (state === null) this.schedules.delete(id);
    else this.schedules.set(id, JSON.stringify(state));
  }

  async loadSchedules(): Promise<Record<string, ScheduleState>> {
    const out: Record<string, ScheduleState> = {};
    for (const [id, json] of this.schedules) out[id] = JSON.parse(json) as ScheduleState;
    return out;
  }

  async close(): Promise<void> {}
}

/** The id a stored commitment must carry. */
export function checkCommitmentId(record: StoredCommitment): string {
  if (typeof record?.id !== "string" || record.id.length === 0)
    throw new TypeError("a stored commitment needs a non-empty string id");
  return record.id;
}
