import { truncate } from "node:fs/promises";
import type { StoredCommitment } from "../../ports/store.js";
import { appendDurable, replaceDurable } from "./durable-file.js";
import { corruptError, encodeLine, parseLine, readLines } from "./jsonl-file.js";

/** The file of the store directory that holds commitments (no session file can take this name). */
export const COMMITMENTS_FILE = "commitments.log";

/**
 * The JSONL store's commitments: one append-only file of checksummed lines, each the whole new version
 * of one commitment (created, merged, every status change and attempt). Loading keeps the last version
 * per id; a torn last line (a crash mid-append) is cut away, a damaged middle line refuses to load. When
 * superseded versions outnumber live ones the file is rewritten atomically at load, so it stays in
 * proportion to the commitments it holds.
 *
 * @example
 * ```ts
 * const log = new CommitmentLog("/var/tiller/commitments.log", "/var/tiller");
 * await log.append([{ id: "c1", status: "pending" }]);
 * (await log.load()).length; // 1
 * ```
 */
export class CommitmentLog {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly dir: string,
  ) {}

  /** Appends one line per record and syncs; calls run one after another, in call order. */
  append(records: readonly StoredCommitment[]): Promise<void> {
    const data = Buffer.from(records.map((record) => encodeLine(JSON.stringify(record))).join(""));
    return this.serial(() => appendDurable(this.file, data));
  }

  load(): Promise<StoredCommitment[]> {
    return this.serial(async () => {
      const scan = await readLines(this.file);
      if (!scan) return [];
      if (scan.corrupt.length > 0)
        throw corruptError(this.file, scan.corrupt[0]!, "a damaged line is followed by whole ones");
      const byId = new Map<string, StoredCommitment>();
      for (const line of scan.lines) {
        const record = parseLine(scan, line) as Partial<StoredCommitment>;
        if (typeof record.id === "string") byId.set(record.id, record as StoredCommitment);
      }
      if (scan.validEnd < scan.bytes.length) {
        await truncate(this.file, scan.validEnd);
        await appendDurable(this.file, Buffer.alloc(0)); // sync the new length
      }
      const records = [...byId.values()];
      if (scan.lines.length > 2 * records.length + 64) {
        const data = Buffer.from(records.map((record) => encodeLine(JSON.stringify(record))).join(""));
        await replaceDurable(this.file, this.dir, data);
      }
      return records;
    });
  }

  /** Waits for appends in flight. */
  settled(): Promise<void> {
    return this.chain.then(
      () => undefined,
      () => undefined,
    );
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work);
    this.chain = run.catch(() => undefined);
    return run;
  }
}
