import { mkdir, truncate, unlink } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  type DeliveryBody,
  type DeliveryLog,
  type DeliveryLogOptions,
  type DeliveryRecord,
  keepOption,
  recordsAfter,
  SessionDeliveries,
} from "../../ports/delivery-log.js";
import { sessionFileName } from "../../ports/session-key.js";
import { appendDurable, fsyncDir, replaceDurable } from "./durable-file.js";
import { encodeLine, parseLine, readLines } from "./jsonl-file.js";

/**
 * The `web` channel's deliveries on disk (docs/store.md): one append-only file per session under
 * `<store>/deliveries/`, in the checksummed line format of the transcripts. A delivery is acknowledged
 * (its receipt returned) only after its line is synced, so a client replays it after any crash. A
 * torn last line is cut on load; a damaged line in the middle is skipped. Once a file holds
 * `2 × keep` lines it is compacted to its newest `keep` (a temp file, synced, renamed over it), so an
 * append stays O(1) amortized and a session holds at most `2 × keep` records in memory.
 *
 * @example
 * ```ts
 * const log = new FileDeliveryLog(".tiller", { keep: 1000 });
 * await log.append("web:1", { kind: "reply", text: "hi", runId: "r1" });
 * ```
 */
export class FileDeliveryLog implements DeliveryLog {
  readonly dir: string;
  private readonly keep: number;
  private readonly sessions = new Map<string, Promise<SessionDeliveries>>();
  private made: Promise<void> | undefined;

  constructor(storeDir: string, options?: DeliveryLogOptions) {
    this.dir = join(resolve(storeDir), "deliveries");
    this.keep = keepOption(options);
  }

  async append(session: string, body: DeliveryBody): Promise<DeliveryRecord> {
    const entry = await this.entry(session);
    const file = this.file(session);
    return entry.append(body, async (record) => {
      const created = entry.records.length === 0;
      await appendDurable(file, Buffer.from(encodeLine(JSON.stringify(record))));
      if (created) await fsyncDir(this.dir); // the new file's name is durable too
    });
  }

  async read(session: string): Promise<readonly DeliveryRecord[]> {
    return (await this.entry(session)).kept;
  }

  async readAfter(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]> {
    return recordsAfter((await this.entry(session)).kept, after);
  }

  async close(): Promise<void> {
    const entries = await Promise.allSettled(this.sessions.values());
    // A compaction still running finishes rather than being cut off (which would be safe, not tidy).
    for (const entry of entries) if (entry.status === "fulfilled") await entry.value.settled();
  }

  private file(session: string): string {
    return join(this.dir, `${sessionFileName(session)}.jsonl`);
  }

  private entry(session: string): Promise<SessionDeliveries> {
    let entry = this.sessions.get(session);
    if (!entry) {
      entry = this.load(session);
      this.sessions.set(session, entry);
      entry.catch(() => this.sessions.delete(session)); // a failed load is tried again next time
    }
    return entry;
  }

  private async load(session: string): Promise<SessionDeliveries> {
    this.made ??= mkdir(this.dir, { recursive: true }).then(() => undefined);
    await this.made;
    const file = this.file(session);
    // A compaction cut off before its rename leaves its temp file: the log itself is whole.
    await unlink(`${file}.tmp`).catch(() => undefined);
    const compact = (kept: readonly DeliveryRecord[]) => this.compact(file, kept);
    const scan = await readLines(file);
    if (!scan) return new SessionDeliveries([], this.keep, compact);
    const records = scan.lines.map((line) => parseLine<DeliveryRecord>(scan, line));
    // A crash mid-append leaves a torn tail: cut it so the next line starts on a line boundary.
    if (scan.validEnd < scan.bytes.length) await truncate(file, scan.validEnd);
    return new SessionDeliveries(records, this.keep, compact);
  }

  /** Old file or new, never a mix: a kill at any step leaves every acknowledged kept line readable. */
  private async compact(file: string, kept: readonly DeliveryRecord[]): Promise<void> {
    const lines = kept.map((record) => encodeLine(JSON.stringify(record))).join("");
    await replaceDurable(file, this.dir, Buffer.from(lines));
  }
}
