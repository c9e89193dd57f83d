/**
 * The on-disk format of the JSONL store (docs/store.md): checksummed lines, the scan that tells whole
 * lines from torn or corrupt ones, and the header and state lines that carry session keys. A reopen
 * reads every line of a transcript, so the scan works on the file's bytes and decodes nothing (nor does
 * the replay into a log that follows it, transcript-replay.ts).
 */
import { open } from "node:fs/promises";
import { TillerError } from "../../errors.js";
import { sessionFileName } from "../../ports/session-key.js";
import { crc32, crc32Run } from "./crc32.js";
import { readChunked, readIfExists } from "./durable-file.js";

/** Written in every transcript header; a reader refuses formats it does not know. */
export const TRANSCRIPT_FORMAT = "tiller.transcript/1";

/** `,"crc":"` + 8 hex digits + `"}`: the fixed-size tail every line ends with (before its newline). */
const CRC_TAIL = 18;
const CRC_KEY = Buffer.from(',"crc":"');
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
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
  const crc = crc32(Buffer.from(json)).toString(16).padStart(8, "0");
  return `${json.slice(0, -1)},"crc":"${crc}"}\n`;
}

/** A line that passed its checksum. */
export interface ValidLine {
  /** 1-based line number in the file. */
  line: number;
  /** Where the line's JSON (without its checksum key, see scanLines) starts and ends in the bytes. */
  start: number;
  end: number;
}

export interface LineScan {
  /** The scanned buffer, with each valid line's checksum tail cut (see scanLines). */
  bytes: Buffer;
  lines: ValidLine[];
  /** Invalid lines followed by a valid one: damage, never a crash artefact. */
  corrupt: number[];
  /** Byte offset just past the last valid line; everything after it is a torn tail. */
  validEnd: number;
  /** Number of the last line read (valid or not). */
  lastLine: number;
  /** CRC-32 of all the bytes as read (before the scan cut checksum tails), continued from `seed`. */
  crc: number;
  /** The same for the bytes before `validEnd`: what the file holds once a torn tail is cut. */
  validCrc: number;
  /** Lines before `validEnd`. */
  validLines: number;
}

/** Where a scan starts: past a prefix already verified (see transcript-index.ts). */
export interface ScanFrom {
  /** Byte offset of the first line to scan. */
  offset: number;
  /** Lines before it. */
  lines: number;
  /** CRC-32 of the bytes before it. */
  crc: number;
}

const START: ScanFrom = { offset: 0, lines: 0, crc: 0 };

const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) HEX["0123456789abcdef".charCodeAt(i)] = i;

/**
 * Splits a file into lines and verifies each checksum, without decoding or parsing anything: a reopened
 * transcript decodes and parses a record only when it is read. A crash can only leave damage after the
 * last whole line, so invalid lines there are a torn tail (to cut); an invalid line before a valid one
 * is corruption.
 *
 * Takes `buf` over: in each valid line the comma that opens the checksum tail is overwritten with `}`,
 * so the line begins with exactly the JSON the checksum covers, one range to check and, later, to
 * decode. Bytes from `validEnd` on are left as read.
 */
export function scanLines(buf: Buffer, from: ScanFrom = START): LineScan {
  const scanner = new LineScanner(from);
  scanner.scan(buf, buf.length, true);
  return scanner.result(buf);
}

/**
 * Reads a file and scans its lines (see {@link scanLines}), each chunk while the next one is read, so
 * the checksums overlap the disk; undefined when the file does not exist.
 */
export async function readLines(file: string): Promise<LineScan | undefined> {
  const scanner = new LineScanner(START);
  const buf = await readChunked(file, (bytes, filled) => scanner.scan(bytes, filled, false));
  if (!buf) return undefined;
  scanner.scan(buf, buf.length, true);
  return scanner.result(buf);
}

/** A scan that may see its bytes arrive in chunks. */
class LineScanner {
  private readonly lines: ValidLine[] = [];
  private readonly invalid: number[] = [];
  private validEnd: number;
  private start: number;
  private lineNo: number;
  private crc: number;
  /** Bytes the CRC covers: everything read so far, before the scan changes any of it. */
  private crcEnd: number;

  constructor(private readonly from: ScanFrom) {
    this.validEnd = this.start = this.crcEnd = from.offset;
    this.lineNo = from.lines;
    this.crc = from.crc;
  }

  /** Scans the lines of `buf[0, filled)` not scanned yet; a last line without newline only `atEnd`. */
  scan(buf: Buffer, filled: number, atEnd: boolean): void {
    const bytes = filled === buf.length ? buf : buf.subarray(0, filled);
    this.crc = crc32Run(bytes.subarray(this.crcEnd, filled), this.crc);
    this.crcEnd = filled;
    while (this.start < filled) {
      const nl = bytes.indexOf(NEWLINE, this.start);
      const end = nl === -1 ? filled : nl;
      if (end === filled && !atEnd) return; // the rest of this line is still being read
      this.lineNo++;
      if (end < filled && checksumOk(bytes, this.start, end)) {
        this.lines.push({ line: this.lineNo, start: this.start, end: end - CRC_TAIL + 1 });
        this.validEnd = end + 1;
      } else this.invalid.push(this.lineNo);
      this.start = end + 1;
    }
  }

  result(bytes: Buffer): LineScan {
    const lastValid = this.lines.at(-1)?.line ?? this.from.lines;
    const corrupt = this.invalid.filter((line) => line < lastValid);
    const whole = this.validEnd === this.crcEnd;
    return {
      bytes,
      lines: this.lines,
      corrupt,
      validEnd: this.validEnd,
      lastLine: this.lineNo,
      crc: this.crc,
      validCrc: whole ? this.crc : this.validPrefixCrc(bytes),
      validLines: whole ? this.lineNo : lastValid,
    };
  }

  /**
   * CRC-32 of the bytes before `validEnd` as read, after a torn tail: once per crash, so it takes a
   * second pass over the scanned lines with their checksum tails put back as they were on disk.
   */
  private validPrefixCrc(bytes: Buffer): number {
    for (const line of this.lines) bytes[line.end - 1] = COMMA;
    const crc = crc32Run(bytes.subarray(this.from.offset, this.validEnd), this.from.crc);
    for (const line of this.lines) bytes[line.end - 1] = CLOSE_BRACE;
    return crc;
  }
}

function checksumOk(buf: Uint8Array, start: number, end: number): boolean {
  const tail = end - CRC_TAIL;
  if (tail <= start || buf[end - 1] !== CLOSE_BRACE || buf[end - 2] !== 0x22) return false;
  for (let i = 0; i < CRC_KEY.length; i++) if (buf[tail + i] !== CRC_KEY[i]) return false;
  let stored = 0;
  for (let i = end - 10; i < end - 2; i++) {
    const digit = HEX[buf[i]!]!;
    if (digit < 0) return false;
    stored = stored * 16 + digit;
  }
  // The checksum covers the line up to its tail plus a closing brace: writing that brace over the
  // tail's comma puts all of it in one range.
  buf[tail] = CLOSE_BRACE;
  if (crc32(buf, start, tail + 1) === stored) return true;
  buf[tail] = COMMA; // an invalid line is quarantined or reported as it was read
  return false;
}

/** Parses a valid line (its checksum key already cut off, see {@link scanLines}). */
/** The JSON of one whole line; `T` names the record shape the caller stored there. */
export function parseLine<T = Record<string, unknown>>(scan: LineScan, line: ValidLine): T {
  return JSON.parse(scan.bytes.toString("utf8", line.start, line.end)) as T;
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
      const scan = scanLines(Buffer.concat(chunks));
      return scan.lines[0] && parseLine(scan, scan.lines[0]);
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
  const scan = scanLines(buf);
  const value = scan.lines[0] && parseLine(scan, scan.lines[0]);
  // Written by rename, a state file is whole or absent: anything else is damage.
  if (value?.type !== "state" || value.sessionKey !== session) {
    throw corruptError(file, 1, "not a whole state line for this session key");
  }
  return value.state ?? null;
}
