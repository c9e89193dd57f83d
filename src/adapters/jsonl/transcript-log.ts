import { ConfigError, StaleWriterError } from "../../errors.js";
import type { ExpectedHead, RecordBody, TranscriptHead, TranscriptRecord } from "../../ports/store.js";
import { UNDELIVERED_FINAL } from "../../ports/store.js";
import { parseSlices } from "./parse-slices.js";
import { compactRecordText, expandRecordText } from "./record-text.js";
import type { LogIndexState } from "./transcript-index.js";

const ROLES = new Set(["user", "assistant", "toolCall", "toolResult", "custom"]);
const COMMA = 0x2c;
const SPACE = 0x20;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const NEWLINE = 0x0a;
/** Records a log keeps in an array of exact length before it grows by push (see `push`). */
const SHORT_LOG = 8;
/** `,"crc":"` + 8 hex digits + `"}`: what ends every line of a transcript file, before its newline. */
const CRC_TAIL = 18;
const NONE = { starts: [], ends: [] };
/** The empty seq list logs share until they hold one: most never do, and every session has a log. */
const NO_SEQS: number[] = [];
Object.freeze(NO_SEQS); // a push to it would be a bug: fail loudly

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
 * store (as the cache of what is durable), so both answer alike. Records are kept as JSON, never as
 * objects: parsing on read is the copy callers need anyway. A log replayed from a file keeps that
 * file's bytes, arranged so that consecutive records read as a JSON array: a reopen decodes and parses
 * nothing, and a read of many records is one `JSON.parse` per slice of them (see {@link pushBytes}).
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
  /**
   * Byte ranges of the JSON of the records replayed from `source`: seqs 1 to `starts.length`. A log
   * without a source (every log of the memory store) shares one frozen empty array: it is never pushed to.
   */
  private starts: number[];
  private ends: number[];
  /**
   * The records pushed as text, which follow: `texts[i]` has seq `starts.length + i + 1`, kept without
   * the header fields the log knows (record-text.ts).
   */
  private texts: string[] = [];
  /** Seqs of undelivered-final markers, ascending; the shared empty array until the first marker. */
  private markers: number[] = NO_SEQS;
  /** Made at the first marker: most transcripts never have one, and every open session has a log. */
  private finalOfMarker: Map<number, number | undefined> | undefined;
  sessionId: string;
  revision: number;
  /** The window holds the records with seq greater than this (the last reset or rotation point). */
  windowAfterSeq = 0;

  /** The bytes of the file replayed with {@link pushBytes}. */
  private readonly source: Buffer | undefined;

  /** `source`: the bytes of the transcript file the log is replayed from (see {@link pushBytes}). */
  constructor(sessionId: string, revision = 1, source?: Buffer) {
    this.sessionId = sessionId;
    this.revision = revision;
    this.source = source;
    this.starts = source ? [] : NO_SEQS;
    this.ends = source ? [] : NO_SEQS;
  }

  /**
   * A log resumed from an index (transcript-index.ts) over `source`, the file's bytes as read, whose
   * first `covered` bytes the caller verified against the index; undefined when the index does not
   * describe records inside them (then the caller scans the file). Lays the bytes out as the scan and
   * {@link pushBytes} would have, and takes the index's range arrays over (no copy of 2 × 100k numbers).
   */
  static fromIndex(index: LogIndexState, source: Buffer, covered: number): TranscriptLog | undefined {
    const { starts, ends, markers, revision, windowAfterSeq } = index;
    const count = starts.length;
    if (revision < 1 || windowAfterSeq > count || starts.length !== ends.length) return undefined;
    for (let i = 0; i < count; i++) {
      const start = starts[i]!;
      const end = ends[i]!;
      const inOrder =
        start >= 1 && start < end && end + CRC_TAIL <= covered && (i === 0 || ends[i - 1]! < start);
      // Each range must still be a line's JSON up to its checksum tail (`,"crc":"…"}` and a newline).
      if (
        !inOrder ||
        source[start - 1] !== NEWLINE ||
        source[start] !== OPEN_BRACE ||
        source[end - 1] !== COMMA ||
        source[end - 1 + CRC_TAIL] !== NEWLINE
      )
        return undefined;
    }
    for (let i = 0; i < markers.length; i++)
      if (!(markers[i]! >= 1 && markers[i]! <= count && (i === 0 || markers[i - 1]! < markers[i]!)))
        return undefined;
    const log = new TranscriptLog(index.sessionId, revision, source);
    log.starts = starts;
    log.ends = ends;
    for (let i = 0; i < count; i++) {
      const end = ends[i]!;
      source[end - 1] = CLOSE_BRACE; // where the scan ends a record's JSON (see scanLines)
      if (i > 0) {
        const previousEnd = ends[i - 1]!;
        source[previousEnd] = COMMA;
        for (let j = previousEnd + 1; j < starts[i]!; j++) source[j] = SPACE;
      }
    }
    if (markers.length > 0) log.markers = [...markers];
    log.windowAfterSeq = windowAfterSeq;
    return log;
  }

  /**
   * What an index needs to resume this log: the ranges of the records replayed from the file, then
   * `appended`, the ranges of those pushed as text since (the caller saw them written). Undefined when
   * `appended` does not account for every pushed record.
   */
  indexState(
    appended: { starts: readonly number[]; ends: readonly number[] } = NONE,
  ): LogIndexState | undefined {
    if (appended.starts.length !== this.texts.length || appended.ends.length !== this.texts.length)
      return undefined;
    const { sessionId, revision, windowAfterSeq } = this;
    return {
      sessionId,
      revision,
      windowAfterSeq,
      markers: [...this.markers],
      starts: this.starts.concat(appended.starts),
      ends: this.ends.concat(appended.ends),
    };
  }

  get lastSeq(): number {
    return this.starts.length + this.texts.length;
  }

  head(): TranscriptHead {
    return { sessionId: this.sessionId, revision: this.revision, lastSeq: this.lastSeq };
  }

  /** Adds the next record; false when it does not continue the log (wrong seq, session or revision). */
  push(text: string, meta: RecordMeta): boolean {
    if (!this.continues(meta)) return false;
    text = compactRecordText(text, meta.seq, this.sessionId);
    // The first few records go into an array of exactly their number: a push makes room for seventeen,
    // and most sessions a store holds are short (one exchange). Longer logs grow by push.
    if (this.texts.length < SHORT_LOG) this.texts = this.texts.concat(text);
    else this.texts.push(text);
    return true;
  }

  /**
   * Adds the next record, whose JSON is `source[start, end)`; only before any {@link push}. The log
   * takes the bytes between its records over (they have been replayed already): a comma and spaces
   * replace them (checksum tails and control lines), so any run of records reads as the inside of one
   * JSON array.
   */
  pushBytes(start: number, end: number, meta: RecordMeta): boolean {
    const { source, ends } = this;
    if (source === undefined || this.texts.length > 0 || start < 1 || !this.continues(meta)) return false;
    const previousEnd = ends.at(-1);
    if (previousEnd !== undefined) {
      source[previousEnd] = COMMA;
      for (let i = previousEnd + 1; i < start; i++) source[i] = SPACE; // cheaper than a fill() call
    }
    this.starts.push(start);
    ends.push(end);
    return true;
  }

  private continues(meta: RecordMeta): boolean {
    if (
      meta.seq !== this.lastSeq + 1 ||
      meta.sessionId !== this.sessionId ||
      meta.revision !== this.revision
    ) {
      return false;
    }
    if (meta.marker) this.markers = this.markers === NO_SEQS ? [meta.seq] : [...this.markers, meta.seq];
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
    return this.parseFrom(1);
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
    const window = this.parseFrom(start + 1);
    if (finals.size === 0) return window;
    return [...finals]
      .sort((a, b) => a - b)
      .map((seq) => parseRecord(this.text(seq)!))
      .concat(window);
  }

  /** The records from `seq` to the end, freshly parsed. */
  private parseFrom(seq: number): TranscriptRecord[] {
    const replayed = this.starts.length;
    const out =
      seq <= replayed
        ? parseSlices(this.source!, this.starts, this.ends, seq - 1, (i) => parseRecord(this.text(i + 1)!))
        : [];
    for (let i = Math.max(seq - replayed, 1); i <= this.texts.length; i++)
      out.push(parseRecord(this.text(replayed + i)!));
    return out;
  }

  /** The JSON of the record with this seq. */
  private text(seq: number): string | undefined {
    const i = seq - 1;
    if (i >= this.starts.length) {
      const text = this.texts[i - this.starts.length];
      return text === undefined ? undefined : expandRecordText(text, seq, this.sessionId);
    }
    return i >= 0 ? this.decode(this.starts[i]!, this.ends[i]!) : undefined;
  }

  /** The text of `source[start, end)`. */
  private decode(start: number, end: number): string {
    return this.source!.toString("utf8", start, end);
  }

  /** The seq of the assistant final a marker points at: `details.finalSeq`, else the record before it. */
  private markedFinal(markerSeq: number): number | undefined {
    this.finalOfMarker ??= new Map();
    if (this.finalOfMarker.has(markerSeq)) return this.finalOfMarker.get(markerSeq);
    const marker = parseRecord(this.text(markerSeq)!);
    const named = marker.role === "custom" ? marker.details?.finalSeq : undefined;
    const seq =
      typeof named === "number" && Number.isInteger(named) && named < markerSeq ? named : markerSeq - 1;
    const text = this.text(seq);
    const finalSeq = text !== undefined && parseRecord(text).role === "assistant" ? seq : undefined;
    this.finalOfMarker.set(markerSeq, finalSeq);
    return finalSeq;
  }
}

/** Parses one stored record text (the JSON the record was appended as, without a checksum key). */
export function parseRecord(text: string): TranscriptRecord {
  return JSON.parse(text) as TranscriptRecord;
}

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
