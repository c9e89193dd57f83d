import { truncate } from "node:fs/promises";
import { join } from "node:path";
import type { ScheduleState } from "../../ports/store.js";
import { appendDurable, readIfExists, replaceDurable } from "./durable-file.js";

/** The file name: neither `.jsonl` nor `.state.json`, so it is never taken for a session. */
export const SCHEDULE_FILE = "schedules.log";

/**
 * Schedule states of a JSONL store: an append-only file of `{ "id", "state" }` lines, the last line of
 * an id winning. Each save is one fsynced append (O(1) whatever the number of schedules); a torn last
 * line (a crash mid-write) is ignored on load, so the state before it stands, and cut off, so the next
 * append starts a line of its own instead of joining the torn one. Loading compacts the file
 * (atomically) once it holds many more lines than schedules.
 *
 * @example
 * ```ts
 * const log = new ScheduleLog("/var/lib/tiller");
 * await log.save("digest", { nextRunAt: 60_000, anchor: 0, spec: '{"everyMs":60000}' });
 * (await log.load()).digest?.nextRunAt; // 60000
 * ```
 */
export class ScheduleLog {
  private chain: Promise<unknown> = Promise.resolve();
  private readonly file: string;

  constructor(private readonly dir: string) {
    this.file = join(dir, SCHEDULE_FILE);
  }

  save(id: string, state: ScheduleState | null): Promise<void> {
    const line = Buffer.from(`${JSON.stringify({ id, state })}\n`);
    return this.serialize(() => appendDurable(this.file, line));
  }

  load(): Promise<Record<string, ScheduleState>> {
    return this.serialize(async () => {
      const buf = await readIfExists(this.file);
      const states: Record<string, ScheduleState> = {};
      if (!buf) return states;
      const end = buf.lastIndexOf(0x0a) + 1;
      if (end < buf.length) {
        await truncate(this.file, end);
        await appendDurable(this.file, Buffer.alloc(0)); // sync the new length
      }
      const lines = buf.subarray(0, end).toString("utf8").split("\n");
      let count = 0;
      for (const line of lines) {
        if (line.length === 0) continue;
        let parsed: { id?: unknown; state?: unknown };
        try {
          parsed = JSON.parse(line) as { id?: unknown; state?: unknown };
        } catch {
          // Every line before the last newline was written whole and fsynced: this is not ours to read.
          continue;
        }
        if (typeof parsed.id !== "string") continue;
        count++;
        if (parsed.state === null) delete states[parsed.id];
        else states[parsed.id] = parsed.state as ScheduleState;
      }
      const live = Object.keys(states).length;
      if (count > 64 && count > 4 * live) {
        const compact = Object.entries(states)
          .map(([id, state]) => `${JSON.stringify({ id, state })}\n`)
          .join("");
        await replaceDurable(this.file, this.dir, Buffer.from(compact));
      }
      return states;
    });
  }

  /** Waits for writes in flight. */
  async settle(): Promise<void> {
    await this.chain.catch(() => undefined);
  }

  private serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = this.chain.then(work, work);
    this.chain = run.catch(() => undefined);
    return run;
  }
}
