/**
 * The on-disk format of the JSONL store (docs/store.md): checksummed lines, the scan that tells whole
 * lines from torn or corrupt ones, the replay of a transcript file into a {@link TranscriptLog}, and the
 * header and state lines that carry session keys.
 */
import { open } from "node:fs/promises";
import * as zlib from "node:zlib";
import { TillerError } from "../errors.js";
import { readIfExists } from "./durable-file.js";
import { sessionFileName } from "./session-key.js";
import type { TranscriptRecord } from "./store.js";
import { UNDELIVERED_FINAL } from "./store.js";
import { metaOf, type RecordMeta, TranscriptLog } from "./transcript-log.js";

/** CRC-32 (zlib's). Native in Node ≥ 20.15; a table-driven fallback for older 20.x. */
const crc32: (data: string | Uint8Array, value?: number) => number =
  typeof zlib.crc32 === "function" ? zlib.crc32 : crc32Fallback;

let crcTable: Int32Array | undefined;
function crc32Fallback(data: string | Uint8Array, value = 0): number {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  crcTable ??= Int32Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c;
  });
  let crc = ~value;
  for (const byte of bytes) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

/** Written in every transcript header; a reader refuses formats it does not know. */
export const TRANSCRIPT_FORMAT = "tiller.transcript/1";

/** `,"crc":"` + 8 hex digits + `"}`: the fixed-size tail every line ends with (before its newline). */
const CRC_TAIL = 18;
const CRC_KEY = Buffer.from(',"crc":"');
const CLOSE_BRACE = Buffer.from("}");
const NEWLINE = 0x0a;

/**
 * Turns the JSON text of an object into one store line: the checksum goes in as the last key, computed
 * over the JSON without it, so a reader verifies bytes before it parses them.
 *
 * @example
 * ```ts
 * encodeLine('{"type":"reset","revision":2,"at":0}'); // '{"type":"reset",...,"crc":"1a2b3c4d"}\n'
 * ```
 */
export function encodeLine(json: string): string {
  const crc = crc32(json).toString(16).padStart(8, "0");
  return `${json.slice(0, -1)},"crc":"${crc}"}\n`;
}

/** A line that passed its checksum. */
export interface ValidLine {
  /** 1-based line number in the file. */
  line: number;
  /** The line without its newline, `crc` key included (parseLine drops it). */
  text: string;
}

export interface LineScan {
  lines: ValidLine[];
  /** Invalid lines followed by a valid one: damage, never a crash artefact. */
  corrupt: number[];
  /** Byte offset just past the last valid line; everything after it is a torn tail. */
  validEnd: number;
}

/** Files above this are decoded line by line (V8 caps string length near 512 MB). */
const WHOLE_DECODE_MAX = 256 * 1024 * 1024;
const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) HEX["0123456789abcdef".charCodeAt(i)] = i;

/**
 * Splits a file into lines and verifies each checksum (no JSON parsing: a reopened transcript is parsed
 * only when read). A crash can only leave damage after the last whole line, so invalid lines there are a
 * torn tail (to cut); an invalid line before a valid one is corruption.
 */
export function scanLines(buf: Buffer): LineScan {
  const lines: ValidLine[] = [];
  const invalid: number[] = [];
  // One decode plus slices is ~5x cheaper than decoding each line. Slicing by byte offsets is exact when
  // the decoded length equals the byte length: every byte then became exactly one UTF-16 unit.
  const whole = buf.length <= WHOLE_DECODE_MAX ? buf.toString("utf8") : undefined;
  const sliceable = whole !== undefined && whole.length === buf.length;
  // A plain Uint8Array view: its subarray() is ~1.5x cheaper than Buffer's, once per line.
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
  let validEnd = 0;
  let start = 0;
  let lineNo = 0;
  while (start < buf.length) {
    lineNo++;
    const nl = buf.indexOf(NEWLINE, start);
    const end = nl === -1 ? buf.length : nl;
    if (nl !== -1 && checksumOk(bytes, start, end)) {
      lines.push({
        line: lineNo,
        text: sliceable ? whole.slice(start, end) : buf.toString("utf8", start, end),
      });
      validEnd = end + 1;
    } else invalid.push(lineNo);
    start = end + 1;
  }
  const lastValid = lines.at(-1)?.line ?? 0;
  return { lines, corrupt: invalid.filter((line) => line < lastValid), validEnd };
}

function checksumOk(buf: Uint8Array, start: number, end: number): boolean {
  const tail = end - CRC_TAIL;
  if (tail <= start || buf[end - 1] !== 0x7d || buf[end - 2] !== 0x22) return false;
  for (let i = 0; i < CRC_KEY.length; i++) if (buf[tail + i] !== CRC_KEY[i]) return false;
  let stored = 0;
  for (let i = end - 10; i < end - 2; i++) {
    const digit = HEX[buf[i]!]!;
    if (digit < 0) return false;
    stored = stored * 16 + digit;
  }
  return crc32(CLOSE_BRACE, crc32(buf.subarray(start, tail))) === stored;
}

/** Parses a verified line; the checksum key is dropped. */
export function parseLine(text: string): Record<string, unknown> {
  const value = JSON.parse(text) as Record<string, unknown>;
  delete value.crc;
  return value;
}

/** The first line of every transcript file. */
export interface HeaderLine {
  type: "header";
  format: string;
  sessionKey: string;
  sessionId: string;
  createdAt: number;
}

export function isHeader(
  value: Record<string, unknown> | undefined,
): value is Record<string, unknown> & HeaderLine {
  return (
    value?.type === "header" &&
    value.format === TRANSCRIPT_FORMAT &&
    typeof value.sessionKey === "string" &&
    typeof value.sessionId === "string"
  );
}

/** `STORE_CORRUPT`, naming the file and the line so an operator can inspect it. */
export function corruptError(file: string, line: number, reason: string): TillerError {
  return new TillerError("STORE_CORRUPT", `${file} line ${line}: ${reason}`);
}

/**
 * Rebuilds a transcript from its scanned lines. Returns undefined when the file holds no whole line at
 * all (a creation cut short); throws `STORE_CORRUPT` on damage before the last whole line, a missing
 * header, a header for another key, or a line that does not continue the transcript.
 */
export function replayTranscript(scan: LineScan, file: string, key: string): TranscriptLog | undefined {
  const first = scan.corrupt[0];
  if (first !== undefined)
    throw corruptError(file, first, "checksum mismatch or unreadable line before whole lines");
  const header = scan.lines[0];
  if (!header) return undefined;
  const value = parseOrThrow(header, file);
  if (!isHeader(value)) throw corruptError(file, header.line, `expected a ${TRANSCRIPT_FORMAT} header`);
  if (value.sessionKey !== key)
    throw corruptError(file, header.line, "header belongs to another session key");
  const log = new TranscriptLog(value.sessionId);
  for (let i = 1; i < scan.lines.length; i++) {
    const entry = scan.lines[i]!;
    const meta = recordMeta(entry.text, log.sessionId);
    if (meta) {
      if (!log.push(entry.text, meta)) throw notContinuing(file, entry.line, log);
      continue;
    }
    const line = parseOrThrow(entry, file);
    if (typeof line.role === "string") {
      if (!log.push(entry.text, metaOf(line as unknown as TranscriptRecord)))
        throw notContinuing(file, entry.line, log);
    } else if (line.type === "reset" && line.revision === log.revision + 1) log.reset();
    else if (line.type === "rotate" && typeof line.afterSeq === "number") log.rotate(line.afterSeq);
    else throw corruptError(file, entry.line, `unexpected line type ${JSON.stringify(line.type)}`);
  }
  return log;
}

function parseOrThrow(entry: ValidLine, file: string): Record<string, unknown> {
  try {
    return parseLine(entry.text);
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

const MARKER_NEEDLE = `"customType":${JSON.stringify(UNDELIVERED_FINAL)}`;

/**
 * Reads seq and revision from the fixed prefix the store writes
 * (`{"id":…,"seq":…,"at":…,"sessionId":…,"revision":…,`) without parsing or slicing the line, checking
 * the session id in place. Undefined when the line does not start that way (a control line, or a
 * record from another writer): the caller then parses it.
 */
function recordMeta(text: string, sessionId: string): RecordMeta | undefined {
  if (!text.startsWith('{"id":"')) return undefined;
  // Inside a JSON string every quote is escaped, so `","seq":` can only be the real key boundary.
  const idEnd = text.indexOf('","seq":', 7);
  if (idEnd < 0) return undefined;
  const seq = digitsAt(text, idEnd + 8);
  if (!seq || !text.startsWith(',"at":', seq.end)) return undefined;
  const atEnd = text.indexOf(',"sessionId":"', seq.end + 6);
  const sessionStart = atEnd + 14;
  if (atEnd < 0 || !text.startsWith(sessionId, sessionStart)) return undefined;
  if (!text.startsWith('","revision":', sessionStart + sessionId.length)) return undefined;
  const revision = digitsAt(text, sessionStart + sessionId.length + 13);
  if (!revision || text.charCodeAt(revision.end) !== 0x2c) return undefined;
  // The needle can also sit inside nested data (tool args): confirm on the parsed record.
  const marker =
    text.includes(MARKER_NEEDLE) && metaOf(parseLine(text) as unknown as TranscriptRecord).marker;
  return { seq: seq.value, sessionId, revision: revision.value, marker };
}

/** A run of decimal digits at `index` (no sign, at most 15 digits so the value stays exact). */
function digitsAt(text: string, index: number): { value: number; end: number } | undefined {
  let value = 0;
  let end = index;
  for (let c = text.charCodeAt(end); c >= 0x30 && c <= 0x39 && end - index < 15; c = text.charCodeAt(++end)) {
    value = value * 10 + (c - 0x30);
  }
  return end > index ? { value, end } : undefined;
}

/** Reads just the first line of a file (a header) without loading the whole transcript. */
export async function readFirstLine(file: string): Promise<Record<string, unknown> | undefined> {
  const handle = await open(file, "r");
  try {
    const chunks: Buffer[] = [];
    let position = 0;
    for (;;) {
      const chunk = Buffer.alloc(position === 0 ? 4096 : 65536);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) return undefined;
      const nl = chunk.subarray(0, bytesRead).indexOf(NEWLINE);
      chunks.push(chunk.subarray(0, nl === -1 ? bytesRead : nl + 1));
      if (nl === -1) {
        position += bytesRead;
        continue;
      }
      const first = scanLines(Buffer.concat(chunks)).lines[0];
      return first && parseLine(first.text);
    }
  } finally {
    await handle.close();
  }
}

/**
 * The session key a transcript or state file belongs to, read from its first line (file names are
 * one-way hashes). Undefined for a file that vanished or a transcript with no whole line (a creation cut
 * short: nothing in it was acknowledged); `STORE_CORRUPT` for anything else without a matching key.
 */
export async function readFileKey(file: string, base: string): Promise<string | undefined> {
  let first: Record<string, unknown> | undefined;
  try {
    first = await readFirstLine(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const key = isHeader(first) || first?.type === "state" ? first.sessionKey : undefined;
  if (typeof key === "string" && sessionFileName(key) === base) return key;
  if (
    file.endsWith(".jsonl") &&
    scanLines((await readIfExists(file)) ?? Buffer.alloc(0)).lines.length === 0
  ) {
    return undefined;
  }
  throw corruptError(file, 1, "no valid header for a session key matching this file name");
}

/** A state file's single line: `{"type":"state","sessionKey":…,"state":…,"crc":…}`. */
export function encodeState(session: string, stateJson: string): Buffer {
  return Buffer.from(
    encodeLine(`{"type":"state","sessionKey":${JSON.stringify(session)},"state":${stateJson}}`),
  );
}

/** The state saved for `session`, or null when there is none. */
export async function readState(file: string, session: string): Promise<unknown | null> {
  const buf = await readIfExists(file);
  if (!buf) return null;
  const first = scanLines(buf).lines[0];
  const value = first && parseLine(first.text);
  // Written by rename, a state file is whole or absent: anything else is damage.
  if (value?.type !== "state" || value.sessionKey !== session) {
    throw corruptError(file, 1, "not a whole state line for this session key");
  }
  return value.state ?? null;
}
