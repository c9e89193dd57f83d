/**
 * The index of a transcript (`<file>.index`, docs/store.md): what a full scan of the file's first
 * `covered` bytes found, so that the next load need not scan them again. It is a cache, never the
 * truth: a load uses it only when the CRC-32 of the file's first `covered` bytes equals the one it
 * recorded, and otherwise scans the whole file as if there were none. The same bytes are verified
 * either way; with the index as one run instead of line by line. A torn or stale index is therefore
 * harmless, so it is written without fsync.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { endianness } from "node:os";
import { crc32Run } from "./crc32.js";
import { encodeLine, scanLines } from "./jsonl-file.js";

export const INDEX_FORMAT = "tiller.index/1";

/** What a transcript log needs to resume from a verified prefix (see TranscriptLog.fromIndex). */
export interface LogIndexState {
  sessionId: string;
  revision: number;
  windowAfterSeq: number;
  /** Seqs of undelivered-final markers, ascending. */
  markers: number[];
  /** Byte ranges of each record's JSON in the file (seq i + 1 at index i), as the scan cut them. */
  starts: number[];
  ends: number[];
}

export interface TranscriptIndex extends LogIndexState {
  sessionKey: string;
  /** Bytes of the transcript file the index describes: whole lines only. */
  covered: number;
  /** CRC-32 of those bytes. */
  crc: number;
  /** Lines in those bytes. */
  lines: number;
}

/** A header line (checksummed like a transcript line) and the record ranges as little-endian doubles. */
export function encodeIndex(index: TranscriptIndex): Buffer {
  const { starts, ends, ...header } = index;
  const doubles = new Float64Array(2 * starts.length);
  for (let i = 0; i < starts.length; i++) {
    doubles[2 * i] = starts[i]!;
    doubles[2 * i + 1] = ends[i]!;
  }
  const ranges = littleEndian(Buffer.from(doubles.buffer));
  const line = encodeLine(
    JSON.stringify({
      type: "index",
      format: INDEX_FORMAT,
      ...header,
      records: starts.length,
      rangesCrc: crc32Run(ranges),
    }),
  );
  return Buffer.concat([Buffer.from(line), ranges]);
}

/** The index in `buf` when it is whole, of this format and for `key`; undefined otherwise. */
export function decodeIndex(buf: Buffer, key: string): TranscriptIndex | undefined {
  const newline = buf.indexOf(0x0a);
  if (newline < 0) return undefined;
  const scan = scanLines(buf.subarray(0, newline + 1));
  const line = scan.lines[0];
  if (!line) return undefined;
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(buf.toString("utf8", line.start, line.end)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const {
    records,
    rangesCrc,
    sessionKey,
    sessionId,
    covered,
    crc,
    lines,
    revision,
    windowAfterSeq,
    markers,
  } = header;
  const ranges = buf.subarray(newline + 1);
  if (
    header.type !== "index" ||
    header.format !== INDEX_FORMAT ||
    sessionKey !== key ||
    typeof sessionId !== "string" ||
    !isCount(records) ||
    !isCount(covered) ||
    !isCount(lines) ||
    !isCount(revision) ||
    !isCount(windowAfterSeq) ||
    typeof crc !== "number" ||
    !Array.isArray(markers) ||
    !markers.every(isCount) ||
    ranges.length !== 16 * records ||
    crc32Run(ranges) !== rangesCrc
  ) {
    return undefined;
  }
  // A copy: the view needs 8-byte alignment, and the byte order of this machine.
  const aligned = new Uint8Array(ranges.length);
  aligned.set(ranges);
  const doubles = new Float64Array(littleEndian(Buffer.from(aligned.buffer)).buffer);
  const starts = new Array<number>(records);
  const ends = new Array<number>(records);
  for (let i = 0; i < records; i++) {
    starts[i] = doubles[2 * i]!;
    ends[i] = doubles[2 * i + 1]!;
  }
  return { sessionKey, covered, crc, lines, sessionId, revision, windowAfterSeq, markers, starts, ends };
}

/** The index at `file` for `key`, or undefined when there is none or it cannot be used. */
export async function readIndex(file: string, key: string): Promise<TranscriptIndex | undefined> {
  let buf: Buffer;
  try {
    buf = await readFile(file);
  } catch {
    return undefined; // absent or unreadable: the load scans the transcript
  }
  return decodeIndex(buf, key);
}

/** Where the index of the transcript at `transcriptFile` lives. */
export function indexFile(transcriptFile: string): string {
  return `${transcriptFile}.index`;
}

/** Replaces the index at `file` (see {@link encodeIndex}) by rename: a reader sees the old or the new. */
export async function writeIndex(file: string, bytes: Buffer): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, bytes);
  await rename(tmp, file);
}

/** The doubles' bytes turned between this machine's order and little-endian (a no-op on most). */
function littleEndian(bytes: Buffer): Buffer {
  return endianness() === "LE" ? bytes : bytes.swap64();
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
