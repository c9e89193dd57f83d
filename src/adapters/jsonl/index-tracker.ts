/**
 * Follows a transcript file's bytes as its writes become durable, so the store can index it from
 * memory (transcript-index.ts) without reading it back: the file's length and CRC-32, its line count,
 * and the byte range of each record appended since the load.
 */
import { crc32Run } from "./crc32.js";
import type { TranscriptIndex } from "./transcript-index.js";
import type { TranscriptLog } from "./transcript-log.js";

/** Indexing is due once this much is unindexed and also a quarter of the file: O(size) writes in all. */
export const INDEX_AFTER_BYTES = 1024 * 1024;

export class IndexTracker {
  /** Ranges of the records pushed to the log as text, in order (see TranscriptLog.indexState). */
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  /** An index write is in flight. */
  private writing = false;

  /**
   * `size` bytes with CRC-32 `crc` and `lines` lines are on disk; the index on disk covers `indexed`.
   */
  constructor(
    private size: number,
    private crc: number,
    private lines: number,
    private indexed: number,
  ) {}

  /** Record lines written, as `data` (`lines[i]` holds the record whose JSON is `jsons[i]`). */
  recordsWritten(data: string, lines: readonly string[], jsons: readonly string[]): void {
    let at = this.size;
    for (let i = 0; i < lines.length; i++) {
      // The scan's range of a record: its JSON, with the checksum tail's comma standing for its brace.
      this.starts.push(at);
      this.ends.push(at + Buffer.byteLength(jsons[i]!));
      at += Buffer.byteLength(lines[i]!);
    }
    this.linesWritten(data, lines.length);
  }

  /** `count` whole lines written, as `data` (control lines: reset, rotate). */
  linesWritten(data: string, count: number): void {
    const bytes = Buffer.from(data);
    this.crc = crc32Run(bytes, this.crc);
    this.size += bytes.length;
    this.lines += count;
  }

  /** Bytes the index on disk does not cover. */
  get unindexed(): number {
    return this.size - this.indexed;
  }

  /**
   * Whether a new index is worth writing now and none is being written: while appends go on, once
   * INDEX_AFTER_BYTES and a quarter of the file are unindexed; when the store closes, once anything is
   * unindexed in a file of INDEX_AFTER_BYTES or more (the next start then scans nothing).
   */
  due(closing: boolean): boolean {
    if (this.writing || this.unindexed === 0) return false;
    return closing
      ? this.size >= INDEX_AFTER_BYTES
      : this.unindexed >= Math.max(INDEX_AFTER_BYTES, this.size / 4);
  }

  /**
   * The index of the whole file as it is now, for `log` (the store's log of this file), or undefined
   * when the log cannot say (it holds records this tracker did not see written).
   */
  index(sessionKey: string, log: TranscriptLog): TranscriptIndex | undefined {
    const state = log.indexState({ starts: this.starts, ends: this.ends });
    if (!state) return undefined;
    return { sessionKey, covered: this.size, crc: this.crc, lines: this.lines, ...state };
  }

  /** Runs `write` (the index's write) unless one is in flight, and records what the index covers. */
  async write(covered: number, write: () => Promise<void>): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      await write();
      this.indexed = Math.max(this.indexed, covered);
    } finally {
      this.writing = false;
    }
  }
}
