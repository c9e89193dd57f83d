/**
 * The replay of a transcript file's scanned lines into a {@link TranscriptLog} (docs/store.md). It works
 * on the file's bytes: only control lines, and records another writer laid out differently, are decoded
 * and parsed.
 */
import type { TillerError } from "../../errors.js";
import type { TranscriptRecord } from "../../ports/store.js";
import { UNDELIVERED_FINAL } from "../../ports/store.js";
import {
  corruptError,
  isHeader,
  type LineScan,
  parseLine,
  TRANSCRIPT_FORMAT,
  type ValidLine,
} from "./jsonl-file.js";
import { metaOf, type RecordMeta, TranscriptLog } from "./transcript-log.js";

const COMMA = 0x2c;

/**
 * Rebuilds a transcript from its scanned lines. Returns undefined when the file holds no whole line at
 * all (a creation cut short); throws `STORE_CORRUPT` on damage before the last whole line, a missing
 * header, a header for another key, or a line that does not continue the transcript. `resumed`: a log
 * restored from an index (transcript-index.ts), which the scan continues past the indexed bytes.
 */
export function replayTranscript(
  scan: LineScan,
  file: string,
  key: string,
  resumed?: TranscriptLog,
): TranscriptLog | undefined {
  const first = scan.corrupt[0];
  if (first !== undefined)
    throw corruptError(file, first, "checksum mismatch or unreadable line before whole lines");
  const log = resumed ?? startLog(scan, file, key);
  if (!log) return undefined;
  const prefixes = new RecordPrefixReader(scan, log.sessionId);
  for (let i = resumed ? 0 : 1; i < scan.lines.length; i++) {
    const entry = scan.lines[i]!;
    const meta = prefixes.read(entry);
    if (meta) {
      if (!log.pushBytes(entry.start, entry.end, meta)) throw notContinuing(file, entry.line, log);
      continue;
    }
    const line = parseOrThrow(scan, entry, file);
    if (typeof line.role === "string") {
      if (!log.pushBytes(entry.start, entry.end, metaOf(line as unknown as TranscriptRecord)))
        throw notContinuing(file, entry.line, log);
    } else if (line.type === "reset" && line.revision === log.revision + 1) log.reset();
    else if (line.type === "rotate" && typeof line.afterSeq === "number") log.rotate(line.afterSeq);
    else throw corruptError(file, entry.line, `unexpected line type ${JSON.stringify(line.type)}`);
  }
  return log;
}

/** The log a transcript's header line starts (undefined: no whole line at all). */
function startLog(scan: LineScan, file: string, key: string): TranscriptLog | undefined {
  const header = scan.lines[0];
  if (!header) return undefined;
  const value = parseOrThrow(scan, header, file);
  if (!isHeader(value)) throw corruptError(file, header.line, `expected a ${TRANSCRIPT_FORMAT} header`);
  if (value.sessionKey !== key)
    throw corruptError(file, header.line, "header belongs to another session key");
  // The log keeps the file's bytes and decodes a record when it is read.
  return new TranscriptLog(value.sessionId, 1, scan.bytes);
}

function parseOrThrow(scan: LineScan, entry: ValidLine, file: string): Record<string, unknown> {
  try {
    return parseLine(scan, entry);
  } catch (cause) {
    throw corruptError(
      file,
      entry.line,
      `checksum matches but the line is not JSON (${(cause as Error).message})`,
    );
  }
}

function notContinuing(file: string, line: number, log: TranscriptLog): TillerError {
  return corruptError(
    file,
    line,
    `record does not continue the transcript (expected seq ${log.lastSeq + 1})`,
  );
}

const ascii = (text: string) => Buffer.from(text, "latin1");
const ID_OPEN = ascii('{"id":"');
const SEQ_KEY = ascii('","seq":');
const AT_KEY = ascii(',"at":');
const MARKER_NEEDLE = ascii(`"customType":${JSON.stringify(UNDELIVERED_FINAL)}`);
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Reads seq and revision from the fixed prefix the store writes on each record line
 * (`{"id":…,"seq":…,"at":…,"sessionId":…,"revision":…,`), checking the session id in place. It reads
 * the bytes, so a reopen decodes, slices and parses no record line. Undefined for a line that does not
 * start that way (a control line, or a record from another writer): the caller then parses it.
 */
class RecordPrefixReader {
  /** `,"sessionId":"…","revision":` for this transcript, matched as one literal. */
  private readonly sessionKeys: Uint8Array;
  /** What `read` returns, reused: valid until the next call (100k allocations are a reopen's GC). */
  private readonly meta: RecordMeta;
  /** Offset of the next marker needle at or after the line being read (-1: not searched yet). */
  private nextMarker = -1;

  constructor(
    private readonly scan: LineScan,
    sessionId: string,
  ) {
    this.sessionKeys = Buffer.from(`,"sessionId":${JSON.stringify(sessionId)},"revision":`);
    this.meta = { seq: 0, sessionId, revision: 0, marker: false };
  }

  read(line: ValidLine): RecordMeta | undefined {
    const { bytes } = this.scan;
    const { end } = line;
    let pos = matchAt(bytes, line.start, end, ID_OPEN);
    if (pos < 0) return undefined;
    // The id is a JSON string: it ends at the first quote that no backslash escapes.
    while (pos < end && bytes[pos] !== QUOTE) pos += bytes[pos] === BACKSLASH ? 2 : 1;
    pos = matchAt(bytes, pos, end, SEQ_KEY);
    const seqStart = pos;
    let seq = 0;
    for (; isDigit(bytes[pos]) && pos - seqStart < MAX_DIGITS; pos++) seq = seq * 10 + bytes[pos]! - 0x30;
    if (pos === seqStart) return undefined;
    pos = matchAt(bytes, pos, end, AT_KEY);
    if (pos < 0) return undefined;
    while (pos < end && bytes[pos] !== COMMA) pos++; // the timestamp
    pos = matchAt(bytes, pos, end, this.sessionKeys);
    const revisionStart = pos;
    let revision = 0;
    for (; isDigit(bytes[pos]) && pos - revisionStart < MAX_DIGITS; pos++)
      revision = revision * 10 + bytes[pos]! - 0x30;
    if (pos <= revisionStart || bytes[pos] !== COMMA) return undefined;
    this.meta.seq = seq;
    this.meta.revision = revision;
    this.meta.marker = this.isMarker(line);
    return this.meta;
  }

  /**
   * One search for the needle runs through the file, moved on as lines pass it, instead of one search
   * per line. The needle can also sit inside nested data (tool args): a hit is confirmed on the parse.
   */
  private isMarker(line: ValidLine): boolean {
    if (this.nextMarker < line.start) {
      const found = this.scan.bytes.indexOf(MARKER_NEEDLE, line.start);
      this.nextMarker = found === -1 ? Number.POSITIVE_INFINITY : found;
    }
    return this.nextMarker < line.end && metaOf(parseLine<TranscriptRecord>(this.scan, line)).marker;
  }
}

/** The offset just past `literal` when the bytes at `pos` (before `end`) spell it, else -1. */
function matchAt(bytes: Uint8Array, pos: number, end: number, literal: Uint8Array): number {
  if (pos < 0 || pos + literal.length > end) return -1;
  for (let i = 0; i < literal.length; i++) if (bytes[pos + i] !== literal[i]) return -1;
  return pos + literal.length;
}

/** At most this many digits are read for a number, so its value stays exact. */
const MAX_DIGITS = 15;

function isDigit(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x30 && byte <= 0x39;
}
