import { ConfigError, StaleWriterError } from "../errors.js";
import type { ExpectedHead, RecordBody, TranscriptHead, TranscriptRecord } from "./store.js";
import { UNDELIVERED_FINAL } from "./store.js";

const ROLES = new Set(["user", "assistant", "toolCall", "toolResult", "custom"]);

/** What the log needs to know about a record without parsing it. */
export interface RecordMeta {
  seq: number;
  sessionId: string;
  revision: number;
  /** An undelivered-final marker (role custom, customType UNDELIVERED_FINAL). */
  marker: boolean;
}

/**
 * One session's transcript in memory: each record's JSON text in seq order, plus the lifecycle revision
 * and the start of the context window. Shared by the memory store (as its whole state) and the JSONL
 * store (as the cache of what is durable), so both answer alike. Records are kept as text: parsing on
 * read is the copy callers need anyway, and a reopened file needs no parse until someone reads.
 *
 * @example
 * ```ts
 * const log = new TranscriptLog("s1");
 * const [stamped] = stampRecords([{ role: "user", text: "hi", messageId: "m1" }], log.head(), 0, () => "r1");
 * log.push(stamped!.json, metaOf(stamped!.record));
 * log.window(); // [{ id: "r1", seq: 1, role: "user", text: "hi", ... }]
 * ```
 */
export class TranscriptLog {
  /** `texts[seq - 1]` is the JSON of the record with that seq (a stored line may still carry its crc). */
  private readonly texts: string[] = [];
  /** Seqs of undelivered-final markers, ascending. */
  private readonly markers: number[] = [];
  private readonly finalOfMarker = new Map<number, number | undefined>();
  sessionId: string;
  revision: number;
  /** The window holds the records with seq greater than this (the last reset or rotation point). */
  windowAfterSeq = 0;

  constructor(sessionId: string, revision = 1) {
    this.sessionId = sessionId;
    this.revision = revision;
  }

  get lastSeq(): number {
    return this.texts.length;
  }

  head(): TranscriptHead {
    return { sessionId: this.sessionId, revision: this.revision, lastSeq: this.lastSeq };
  }

  /** Adds the next record; false when it does not continue the log (wrong seq, session or revision). */
  push(text: string, meta: RecordMeta): boolean {
    if (
      meta.seq !== this.lastSeq + 1 ||
      meta.sessionId !== this.sessionId ||
      meta.revision !== this.revision
    ) {
      return false;
    }
    this.texts.push(text);
    if (meta.marker) this.markers.push(meta.seq);
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

  /** Every record, freshly parsed (callers own the objects). */
  records(): TranscriptRecord[] {
    return this.texts.map(parseRecord);
  }

  /**
   * The current window, freshly parsed. A marker whose final lies before the window start (a rotation
   * fell between them) brings that final along, so the pair is never split.
   */
  window(): TranscriptRecord[] {
    const start = this.windowAfterSeq;
    const finals = new Set<number>();
    for (let i = this.markers.length - 1; i >= 0 && this.markers[i]! > start; i--) {
      const finalSeq = this.markedFinal(this.markers[i]!);
      if (finalSeq !== undefined && finalSeq <= start) finals.add(finalSeq);
    }
    const out = [...finals].sort((a, b) => a - b).map((seq) => parseRecord(this.texts[seq - 1]!));
    for (let i = start; i < this.texts.length; i++) out.push(parseRecord(this.texts[i]!));
    return out;
  }

  /** The seq of the assistant final a marker points at: `details.finalSeq`, else the record before it. */
  private markedFinal(markerSeq: number): number | undefined {
    if (this.finalOfMarker.has(markerSeq)) return this.finalOfMarker.get(markerSeq);
    const marker = parseRecord(this.texts[markerSeq - 1]!);
    const named = marker.role === "custom" ? marker.details?.finalSeq : undefined;
    const seq =
      typeof named === "number" && Number.isInteger(named) && named < markerSeq ? named : markerSeq - 1;
    const text = this.texts[seq - 1];
    const finalSeq = text !== undefined && parseRecord(text).role === "assistant" ? seq : undefined;
    this.finalOfMarker.set(markerSeq, finalSeq);
    return finalSeq;
  }
}

/** Parses one stored record text; a checksum key left from the file line is dropped. */
export function parseRecord(text: string): TranscriptRecord {
  // Cutting the fixed-size checksum tail off the text is cheaper than deleting the key after parsing
  // (a delete turns the object into a slow dictionary); other positions fall back to the delete.
  const tail = text.length - CRC_TAIL_CHARS;
  if (tail > 0 && text.startsWith(',"crc":"', tail))
    return JSON.parse(`${text.slice(0, tail)}}`) as TranscriptRecord;
  const record = JSON.parse(text) as TranscriptRecord & { crc?: string };
  if ("crc" in record) delete record.crc;
  return record;
}

/** `,"crc":"` + 8 hex digits + `"}`. */
const CRC_TAIL_CHARS = 18;

/** The log's view of a record object. */
export function metaOf(record: TranscriptRecord): RecordMeta {
  return {
    seq: record.seq,
    sessionId: record.sessionId,
    revision: record.revision,
    marker: record.role === "custom" && record.customType === UNDELIVERED_FINAL,
  };
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
      const role: unknown = body.role;
      throw new ConfigError(
        `${field}.role`,
        "user|assistant|toolCall|toolResult|custom",
        typeof role === "string" ? role : typeof role,
      );
    }
    // The JSONL store appends its checksum as a top-level "crc": a body field of that name would be lost.
    if (Object.hasOwn(body, "crc"))
      throw new ConfigError(`${field}.crc`, "no field (reserved)", "a crc field");
    const id = newId();
    const seq = head.lastSeq + index + 1;
    const { sessionId, revision } = head;
    // Header keys first (readable lines), then set again so a body cannot override them. Spreading the
    // body first is tens of times slower in V8 (the re-set header keys make the object a dictionary).
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
