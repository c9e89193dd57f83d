import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { writeFully } from "./durable-file.js";

// O_DSYNC (Linux, macOS) makes each write durable on return, like write + fdatasync; elsewhere, fsync.
const DSYNC = typeof constants.O_DSYNC === "number" && process.platform !== "win32";
const APPEND_DSYNC = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_DSYNC ?? 0);

/** A file the committer appends to; `broken` is set once a write to it failed. */
export interface CommitTarget {
  readonly path: string;
  broken?: unknown;
}

interface Pending {
  target: CommitTarget;
  data: string;
  records: number;
  apply: () => void;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Counters shared with the store: records appended and fsync calls made. */
export interface StoreStats {
  records: number;
  fsyncs: number;
}

/**
 * Group commit for append-only files: writes that arrive within one tick (or one `windowMs` window)
 * form a batch; each touched file gets one durable write (an O_DSYNC write, or write + fdatasync where
 * O_DSYNC is missing), all files in parallel; then every write of the batch is applied (its `apply`
 * updates the in-memory view) and resolved. Batches run one at a time, so the writes to one file land
 * in submission order. A failed write or fsync rejects the whole
 * batch for that file and marks it broken: the caller reloads it from disk rather than trust memory.
 *
 * @example
 * ```ts
 * const commit = new GroupCommit({ windowMs: 0, maxOpenFiles: 64, stats, onBroken: evict });
 * await commit.write({ path: "/tmp/a.jsonl" }, line, 1, () => cache.push(record));
 * ```
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private flushing: Promise<void> | undefined;
  private timer: { cancel: () => void } | undefined;
  // Insertion order doubles as LRU order: a used handle is re-inserted at the end.
  private readonly handles = new Map<CommitTarget, FileHandle>();

  constructor(
    private readonly options: {
      windowMs: number;
      maxOpenFiles: number;
      stats: StoreStats;
      onBroken: (target: CommitTarget, error: unknown) => void;
    },
  ) {}

  /** Resolves once `data` is on disk and `apply` has run; `records` feeds the stats. */
  write(target: CommitTarget, data: string, records: number, apply: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ target, data, records, apply, resolve, reject });
      this.schedule();
    });
  }

  /** Writes queued or in flight. */
  get isBusy(): boolean {
    return this.queue.length > 0 || this.flushing !== undefined;
  }

  /** Resolves when every queued write has been committed or rejected. */
  async drain(): Promise<void> {
    while (this.isBusy) {
      if (!this.flushing) this.run();
      await this.flushing;
    }
  }

  /** Closes the cached handle of one target, or of all. */
  async closeFiles(target?: CommitTarget): Promise<void> {
    const targets = target ? [target] : [...this.handles.keys()];
    await Promise.all(
      targets.map(async (t) => {
        const handle = this.handles.get(t);
        this.handles.delete(t);
        await handle?.close().catch(() => undefined);
      }),
    );
  }

  private schedule(): void {
    if (this.flushing || this.timer) return;
    if (this.options.windowMs > 0) {
      const timeout = setTimeout(() => this.run(), this.options.windowMs);
      this.timer = { cancel: () => clearTimeout(timeout) };
    } else {
      const immediate = setImmediate(() => this.run());
      this.timer = { cancel: () => clearImmediate(immediate) };
    }
  }

  private run(): void {
    this.timer?.cancel();
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    this.flushing = this.flush(batch).finally(() => {
      this.flushing = undefined;
      if (this.queue.length > 0) this.schedule();
    });
  }

  private async flush(batch: Pending[]): Promise<void> {
    const byTarget = new Map<CommitTarget, Pending[]>();
    for (const pending of batch) {
      const list = byTarget.get(pending.target);
      if (list) list.push(pending);
      else byTarget.set(pending.target, [pending]);
    }
    await Promise.all([...byTarget].map(([target, writes]) => this.commit(target, writes)));
    await this.trimHandles();
  }

  private async commit(target: CommitTarget, writes: Pending[]): Promise<void> {
    try {
      // Seqs of these writes were assigned assuming every earlier write succeeded.
      if (target.broken) throw target.broken;
      const handle = await this.handle(target);
      await writeFully(handle, Buffer.from(writes.map((w) => w.data).join(""), "utf8"));
      // With O_DSYNC the write itself returned only once durable: one thread-pool job instead of two.
      if (!DSYNC) await handle.datasync();
      this.options.stats.fsyncs++;
    } catch (error) {
      if (!target.broken) {
        target.broken = error;
        await this.closeFiles(target);
        this.options.onBroken(target, error);
      }
      for (const w of writes) w.reject(error);
      return;
    }
    for (const w of writes) {
      w.apply();
      this.options.stats.records += w.records;
      w.resolve();
    }
  }

  private async handle(target: CommitTarget): Promise<FileHandle> {
    let handle = this.handles.get(target);
    if (handle) this.handles.delete(target);
    else handle = await open(target.path, DSYNC ? APPEND_DSYNC : "a");
    this.handles.set(target, handle);
    return handle;
  }

  private async trimHandles(): Promise<void> {
    const excess = this.handles.size - this.options.maxOpenFiles;
    if (excess <= 0) return;
    await Promise.all([...this.handles.keys()].slice(0, excess).map((t) => this.closeFiles(t)));
  }
}
