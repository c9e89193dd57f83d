import { mkdir, truncate } from "node:fs/promises";
import { join, resolve } from "node:path";
import { appendDurable, fsyncDir } from "../jsonl/durable-file.js";
import { encodeLine, parseLine, readLines } from "../jsonl/jsonl-file.js";
import { sessionFileName } from "../session-key.js";
import {
  type DeliveryBody,
  type DeliveryLog,
  type DeliveryRecord,
  recordsAfter,
  SessionDeliveries,
} from "./delivery-log.js";

/**
 * The `web` channel's deliveries on disk (docs/store.md): one append-only file per session under
 * `<store>/deliveries/`, in the checksummed line format of the transcripts. A delivery is acknowledged
 * (its receipt returned) only after its line is synced, so a client replays it after any crash. A
 * torn last line is cut on load; a damaged line in the middle is skipped.
 *
 * @example
 * ```ts
 * const log = new FileDeliveryLog(".tiller");
 * await log.append("web:1", { kind: "reply", text: "hi", runId: "r1" });
 * ```
 */
export class FileDeliveryLog implements DeliveryLog {
  readonly dir: string;
  private readonly sessions = new Map<string, Promise<SessionDeliveries>>();
  private made: Promise<void> | undefined;

  constructor(storeDir: string) {
    this.dir = join(resolve(storeDir), "deliveries");
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
    return (await this.entry(session)).records;
  }

  async readAfter(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]> {
    return recordsAfter((await this.entry(session)).records, after);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.sessions.values());
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
    const scan = await readLines(file);
    if (!scan) return new SessionDeliveries();
    const records = scan.lines.map((line) => parseLine(scan, line) as unknown as DeliveryRecord);
    // A crash mid-append leaves a torn tail: cut it so the next line starts on a line boundary.
    if (scan.validEnd < scan.bytes.length) await truncate(file, scan.validEnd);
    return new SessionDeliveries(records);
  }
}
