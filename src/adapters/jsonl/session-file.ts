import { rm, truncate, unlink } from "node:fs/promises";
import { join } from "node:path";
import { nanoid } from "nanoid";
import { sessionFileName } from "../../ports/session-key.js";
import type { TranscriptHead } from "../../ports/store.js";
import { crc32Run } from "./crc32.js";
import { appendDurable, fsyncDir, replaceDurable } from "./durable-file.js";
import type { CommitTarget, StoreStats } from "./group-commit.js";
import { IndexTracker } from "./index-tracker.js";
import { encodeLine, TRANSCRIPT_FORMAT } from "./jsonl-file.js";
import { encodeIndex, indexFile, writeIndex } from "./transcript-index.js";
import { loadTranscript } from "./transcript-load.js";
import { TranscriptLog } from "./transcript-log.js";

// A session's transcript file on the way in: loaded (a torn tail repaired) or created. Appends to it
// are the store's (jsonl-store.ts, through the group commit).

/** What loading and creating transcript files needs of the store. */
export interface SessionFiles {
  readonly dir: string;
  now(): number;
  /** The store's counters; each fsync here is counted. */
  readonly counters: StoreStats;
  /** Keeps background work (the index written after a load) in the store's in-flight set. */
  track<T>(promise: Promise<T>): Promise<T>;
}

/** One loaded session: the durable log (the cache) and the tip that queued writes will reach. */
export interface SessionEntry extends CommitTarget {
  readonly key: string;
  readonly log: TranscriptLog;
  readonly tip: TranscriptHead;
  /** Follows the file's bytes to index it from memory. */
  readonly tracker: IndexTracker;
}

/**
 * Loads a session's transcript from its file: a torn tail is moved to quarantine first, a fresh index
 * is written in the background; undefined when the session has no transcript.
 */
export async function loadSessionFile(
  files: SessionFiles,
  session: string,
): Promise<SessionEntry | undefined> {
  const base = sessionFileName(session);
  const path = join(files.dir, `${base}.jsonl`);
  // A corrupt middle throws before anything on disk changes.
  const loaded = await loadTranscript(path, indexFile(path), session);
  if (!loaded) return undefined;
  const { log, scan, index } = loaded;
  if (scan.validEnd < scan.bytes.length) await repairTail(files, path, scan.bytes, scan.validEnd);
  if (!log) return undefined;
  // Past a cut tail, the file is its whole lines: the tracker follows it from there.
  const tracker = new IndexTracker(scan.validEnd, scan.validCrc, scan.validLines, loaded.indexed);
  if (index) {
    const write = () => writeIndex(indexFile(path), encodeIndex(index));
    // After the caller has its transcript (encoding a long index takes milliseconds). A cache: a
    // write that fails leaves the next load to scan.
    const later = new Promise((resolve) => setImmediate(resolve));
    void files.track(later.then(() => tracker.write(index.covered, write))).catch(() => {});
  }
  return { key: session, path, log, tip: log.head(), tracker };
}

/** Moves a torn tail into `<file>.quarantine` (durably) before cutting it off the transcript. */
export async function repairTail(
  files: SessionFiles,
  path: string,
  buf: Buffer,
  validEnd: number,
): Promise<void> {
  const note = { type: "quarantine", at: files.now(), offset: validEnd, bytes: buf.length - validEnd };
  const cut = buf.subarray(validEnd);
  await appendDurable(
    `${path}.quarantine`,
    Buffer.concat([Buffer.from(encodeLine(JSON.stringify(note))), cut, Buffer.from("\n")]),
  );
  files.counters.fsyncs++;
  if (validEnd === 0) {
    await rm(indexFile(path), { force: true }); // nothing left to index
    await unlink(path);
    await fsyncDir(files.dir);
  } else {
    await truncate(path, validEnd);
    await appendDurable(path, Buffer.alloc(0)); // fsync the new length
  }
  files.counters.fsyncs++;
}

/** Creates a session's transcript file (its header line), durably; the session has none yet. */
export async function createSessionFile(files: SessionFiles, session: string): Promise<SessionEntry> {
  const base = sessionFileName(session);
  const path = join(files.dir, `${base}.jsonl`);
  const sessionId = nanoid();
  const header = {
    type: "header",
    format: TRANSCRIPT_FORMAT,
    sessionKey: session,
    sessionId,
    createdAt: files.now(),
  };
  const headerLine = encodeLine(JSON.stringify(header));
  await replaceDurable(path, files.dir, Buffer.from(headerLine, "utf8"));
  files.counters.fsyncs += 2;
  const log = new TranscriptLog(sessionId);
  const headerBytes = Buffer.from(headerLine);
  const tracker = new IndexTracker(headerBytes.length, crc32Run(headerBytes), 1, 0);
  return { key: session, path, log, tip: log.head(), tracker };
}
