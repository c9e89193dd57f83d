/**
 * Loading a transcript file into a {@link TranscriptLog}: through its index (transcript-index.ts) when
 * the index matches the file's bytes, by a full scan otherwise, and deciding when a new index is due.
 */

import { crc32Run } from "./crc32.js";
import { readChunked } from "./durable-file.js";
import { INDEX_AFTER_BYTES } from "./index-tracker.js";
import { type LineScan, readLines, scanLines } from "./jsonl-file.js";
import { readIndex, type TranscriptIndex } from "./transcript-index.js";
import { TranscriptLog } from "./transcript-log.js";
import { replayTranscript } from "./transcript-replay.js";

export interface LoadedTranscript {
  /** Undefined when the file holds no whole line (a creation cut short). */
  log: TranscriptLog | undefined;
  scan: LineScan;
  /** The index to write now (a new one covering the whole file), when the load found it due. */
  index: TranscriptIndex | undefined;
  /** Bytes the index on disk covers once `index` (if any) is written. */
  indexed: number;
}

/**
 * Loads the transcript at `file` (undefined when there is none), using the index at `indexFile` when it
 * matches. Throws `STORE_CORRUPT` as {@link replayTranscript} does; nothing on disk changes.
 */
export async function loadTranscript(
  file: string,
  indexFile: string,
  key: string,
): Promise<LoadedTranscript | undefined> {
  const index = await readIndex(indexFile, key);
  let loaded: { log: TranscriptLog | undefined; scan: LineScan; indexed: number } | undefined;
  if (index) {
    const bytes = await readChunked(file, () => {});
    if (!bytes) return undefined;
    loaded = resume(bytes, index, file, key) ?? { ...replay(scanLines(bytes), file, key), indexed: 0 };
  } else {
    const scan = await readLines(file);
    if (!scan) return undefined;
    loaded = { ...replay(scan, file, key), indexed: 0 };
  }
  const { log, scan, indexed } = loaded;
  const state = log?.indexState();
  // The index covers the whole lines only: a torn tail is cut before the index is written.
  if (!state || scan.validEnd - indexed < INDEX_AFTER_BYTES) return { log, scan, index: undefined, indexed };
  const newIndex = {
    sessionKey: key,
    covered: scan.validEnd,
    crc: scan.validCrc,
    lines: scan.validLines,
    ...state,
  };
  return { log, scan, index: newIndex, indexed: newIndex.covered };
}

function replay(scan: LineScan, file: string, key: string) {
  return { log: replayTranscript(scan, file, key), scan };
}

/**
 * The log from `index` plus a scan of the bytes after it, when the file's first `covered` bytes still
 * have the CRC the index recorded; undefined otherwise.
 */
function resume(bytes: Buffer, index: TranscriptIndex, file: string, key: string) {
  const { covered } = index;
  if (bytes.length < covered || crc32Run(bytes.subarray(0, covered)) !== index.crc) return undefined;
  // The tail's raw CRC is taken by the scan before it changes any byte; the log's layout only touches
  // the covered bytes.
  const log = TranscriptLog.fromIndex(index, bytes, covered);
  if (!log) return undefined;
  const scan = scanLines(bytes, { offset: covered, lines: index.lines, crc: index.crc });
  return { log: replayTranscript(scan, file, key, log), scan, indexed: covered };
}
