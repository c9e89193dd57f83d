import { ConfigError, StaleWriterError } from "../errors.js";
import type { ExpectedHead, RecordBody, TranscriptHead, TranscriptRecord } from "./store.js";
import { UNDELIVERED_FINAL } from "./store.js";

const ROLES = new Set(["user", "assistant", "toolCall", "toolResult", "custom"]);

/**
 * One session's transcript in memory: the records in seq order plus the lifecycle revision and the start
 * of the context window. Shared by the memory store (as its whole state) and the JSONL store (as the
 * cache of what is durable on disk), so both give the same answers.
 *
 * @example
 * ```ts
 * const log = new TranscriptLog("s1");
 * const [record] = stampRecords([{ role: "user", text: "hi", messageId: "m1" }], log.head(), 0, () => "r1");
 * log.push(record!.record);
 * log.window(); // [record]
 * ```
 */
export class TranscriptLog {
  /** Records in seq order; `records[seq - 1]` is the record with that seq. */
  readonly records: TranscriptRecord[] = [];
  sessionId: string;
  revision: number;
  /** The window holds the records with seq greater than this (the last reset or rotation point). */
  windowAfterSeq = 0;

  constructor(sessionId: string, revision = 1) {
    this.sessionId = sessionId;
    this.revision = revision;
  }

  get lastSeq(): number {
    return this.records.length;
  }

  head(): TranscriptHead {
    return { sessionId: this.sessionId, revision: this.revision, lastSeq: this.lastSeq };
  }

  /** Adds the next record; false when it does not continue the log (wrong seq, session or revision). */
  push(record: TranscriptRecord): boolean {
    if (record.seq !== this.lastSeq + 1) return false;
    if (record.sessionId !== this.sessionId || record.revision !== this.revision) return false;
    this.records.push(record);
    return true;
  }

  /** A `/new`: the next revision starts with an empty window; history stays. */
  reset(): void {
    this.revision += 1;
    this.windowAfterSeq = this.lastSeq;
  }

  /** Starts a new context window after `afterSeq` (normally the current end). */
  rotate(afterSeq: number): void {
    this.windowAfterSeq = Math.max(this.windowAfterSeq, Math.min(afterSeq, this.lastSeq));
  }

  /**
   * The current window (stored objects, not copies). A marker whose final lies before the window start
   * (a rotation fell between them) brings that final along, so the pair is never split.
   */
  window(): TranscriptRecord[] {
    const start = this.windowAfterSeq;
    const window = this.records.slice(start);
    let finals: number[] | undefined;
    for (const record of window) {
      if (record.role !== "custom" || record.customType !== UNDELIVERED_FINAL) continue;
      const finalSeq = this.markedFinal(record);
      if (finalSeq !== undefined && finalSeq <= start && !finals?.includes(finalSeq)) {
        finals ??= [];
        finals.push(finalSeq);
      }
    }
    if (!finals) return window;
    finals.sort((a, b) => a - b);
    return [...finals.map((seq) => this.records[seq - 1]!), ...window];
  }

  /** The seq of the assistant final a marker points at: `details.finalSeq`, else the record before it. */
  private markedFinal(marker: TranscriptRecord): number | undefined {
    const named = marker.role === "custom" ? marker.details.finalSeq : undefined;
    const seq =
      typeof named === "number" && Number.isInteger(named) && named < marker.seq ? named : marker.seq - 1;
    return this.records[seq - 1]?.role === "assistant" ? seq : undefined;
  }
}

/** Refuses a writer whose session id or revision is not the transcript's current one. */
export function checkExpect(
  session: string,
  head: { sessionId: string; revision: number } | undefined,
  expect: ExpectedHead,
): void {
  const expected = `${expect?.sessionId}@r${expect?.revision}`;
  if (!head) throw new StaleWriterError(session, expected, "no transcript (call open first)");
  if (expect?.sessionId !== head.sessionId || expect.revision !== head.revision) {
    throw new StaleWriterError(session, expected, `${head.sessionId}@r${head.revision}`);
  }
}

/** A stamped record and its canonical JSON (what the JSONL store writes, before the checksum). */
export interface StampedRecord {
  record: TranscriptRecord;
  json: string;
}

/**
 * Adds the header to each body (seq continuing from `head.lastSeq`) and normalizes it through JSON, so a
 * record read back from memory equals one read back from disk, and the caller's objects are never kept.
 */
export function stampRecords(
  bodies: RecordBody[],
  head: TranscriptHead,
  at: number,
  newId: () => string,
): StampedRecord[] {
  if (!Array.isArray(bodies)) throw new ConfigError("records", "an array of record bodies", typeof bodies);
  return bodies.map((body, index) => {
    const field = `records[${index}]`;
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new ConfigError(field, "a record body object", Array.isArray(body) ? "an array" : typeof body);
    }
    if (!ROLES.has(body.role)) {
      throw new ConfigError(`${field}.role`, "user|assistant|toolCall|toolResult|custom", body.role);
    }
    // The JSONL store appends its checksum as a top-level "crc": a body field of that name would be lost.
    if (Object.hasOwn(body, "crc"))
      throw new ConfigError(`${field}.crc`, "no field (reserved)", "a crc field");
    const id = newId();
    const seq = head.lastSeq + index + 1;
    const { sessionId, revision } = head;
    // Header keys first (readable lines), then set again so a body cannot override them. Spreading the
    // body first would be ~50x slower in V8 (the header keys would turn the object into a dictionary).
    const record = { id, seq, at, sessionId, revision, ...body } as TranscriptRecord;
    record.id = id;
    record.seq = seq;
    record.at = at;
    record.sessionId = sessionId;
    record.revision = revision;
    let json: string;
    try {
      json = JSON.stringify(record);
    } catch (cause) {
      // The message, not the body: describing the body would hit the same unserializable value.
      throw new ConfigError(field, "a JSON-serializable record", (cause as Error).message, { cause });
    }
    return { record: JSON.parse(json) as TranscriptRecord, json };
  });
}

/** Deep copy of JSON data (plain objects, arrays, primitives): several times faster than structuredClone. */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson(value[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    const item = cloneJson((value as Record<string, unknown>)[key]);
    // JSON.parse makes "__proto__" an own key; plain assignment would set the prototype instead.
    if (key === "__proto__")
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true });
    else out[key] = item;
  }
  return out as T;
}

/** The JSON text of a resume state; rejects values JSON cannot carry (undefined, functions, BigInt). */
export function stateJson(state: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(state);
  } catch (cause) {
    throw new ConfigError("state", "a JSON-serializable value or null", (cause as Error).message, { cause });
  }
  if (json === undefined) throw new ConfigError("state", "a JSON-serializable value or null", state);
  return json;
}
