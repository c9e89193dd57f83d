/**
 * The on-disk format of the JSONL store (docs/store.md): checksummed lines, the scan that tells whole
 * lines from torn or corrupt ones, the replay of a transcript file into a {@link TranscriptLog}, and the
 * small durable-write helpers (write + fsync, atomic replace, directory fsync).
 */
import type { FileHandle } from "node:fs/promises";
import { open, readFile, rename } from "node:fs/promises";
import { crc32 } from "node:zlib";
import { TillerError } from "../errors.js";
import type { TranscriptRecord } from "./store.js";
import { TranscriptLog } from "./transcript-log.js";

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

/** A line that passed its checksum, parsed (the `crc` key removed). */
export interface ValidLine {
  value: Record<string, unknown>;
  /** 1-based line number in the file. */
  line: number;
}

export interface LineScan {
  lines: ValidLine[];
  /** Invalid lines followed by a valid one: damage, never a crash artefact. */
  corrupt: number[];
  /** Byte offset just past the last valid line; everything after it is a torn tail. */
  validEnd: number;
}

/**
 * Splits a file into lines and checks each one. A crash can only leave damage after the last whole
 * line, so invalid lines there are a torn tail (to cut); an invalid line before a valid one is corruption.
 */
export function scanLines(buf: Buffer): LineScan {
  const lines: ValidLine[] = [];
  const invalid: number[] = [];
  let validEnd = 0;
  let start = 0;
  let lineNo = 0;
  while (start < buf.length) {
    lineNo++;
    const nl = buf.indexOf(NEWLINE, start);
    const end = nl === -1 ? buf.length : nl;
    const value = nl === -1 ? undefined : verifyLine(buf, start, end);
    if (value) {
      lines.push({ value, line: lineNo });
      validEnd = end + 1;
    } else invalid.push(lineNo);
    start = end + 1;
  }
  const lastValid = lines.at(-1)?.line ?? 0;
  return { lines, corrupt: invalid.filter((line) => line < lastValid), validEnd };
}

function verifyLine(buf: Buffer, start: number, end: number): Record<string, unknown> | undefined {
  if (end - start <= CRC_TAIL || buf[end - 1] !== 0x7d || buf[end - 2] !== 0x22) return undefined;
  if (CRC_KEY.compare(buf, end - CRC_TAIL, end - CRC_TAIL + CRC_KEY.length) !== 0) return undefined;
  const crc = crc32(CLOSE_BRACE, crc32(buf.subarray(start, end - CRC_TAIL)));
  if (crc.toString(16).padStart(8, "0") !== buf.toString("latin1", end - 10, end - 2)) return undefined;
  try {
    const value = JSON.parse(buf.toString("utf8", start, end)) as Record<string, unknown>;
    delete value.crc;
    return value;
  } catch {
    return undefined;
  }
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
  const [header, ...rest] = scan.lines;
  if (!header) return undefined;
  if (!isHeader(header.value))
    throw corruptError(file, header.line, `expected a ${TRANSCRIPT_FORMAT} header`);
  if (header.value.sessionKey !== key)
    throw corruptError(file, header.line, "header belongs to another session key");
  const log = new TranscriptLog(header.value.sessionId);
  for (const { value, line } of rest) {
    if (typeof value.role === "string") {
      if (!log.push(value as unknown as TranscriptRecord)) {
        throw corruptError(
          file,
          line,
          `record does not continue the transcript (expected seq ${log.lastSeq + 1})`,
        );
      }
    } else if (value.type === "reset" && value.revision === log.revision + 1) log.reset();
    else if (value.type === "rotate" && typeof value.afterSeq === "number") log.rotate(value.afterSeq);
    else throw corruptError(file, line, `unexpected line type ${JSON.stringify(value.type)}`);
  }
  return log;
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
      if (nl !== -1) return scanLines(Buffer.concat(chunks)).lines[0]?.value;
      position += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

/** Reads a file, or undefined when it does not exist. */
export async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Writes all of `data` at the handle's position (a short write is legal for `write(2)`). */
export async function writeFully(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/** Appends and fsyncs. The caller counts the fsync. */
export async function appendDurable(file: string, data: Buffer): Promise<void> {
  const handle = await open(file, "a");
  try {
    await writeFully(handle, data);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Old content or new, never a mix: write a temp file, fsync it, rename over, fsync the directory. */
export async function replaceDurable(file: string, dir: string, data: Buffer): Promise<void> {
  const tmp = `${file}.tmp`;
  const handle = await open(tmp, "w");
  try {
    await writeFully(handle, data);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  await fsyncDir(dir);
}

/** Makes a rename, create or unlink in `dir` durable. Some platforms cannot fsync a directory. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM") throw error;
  } finally {
    await handle.close();
  }
}
