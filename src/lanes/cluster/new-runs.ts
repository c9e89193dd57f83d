import { TillerError } from "../../errors.js";
import type { ClusterDb } from "./cluster-db.js";
import type { ClusterEntry } from "./cluster-entry.js";

/**
 * The way of this process's tasks into the lanes' table. The tasks enqueued in one tick are one batch,
 * in call order; batches follow one another. A batch of one lane outside any group is written by the
 * lane's next claim pass (enqueue_claim: the INSERT and the claim in one round trip); any other batch is
 * one INSERT, then a claim pass of each of its lanes. A task aborted or cleared before its row is
 * written gets none; one that leaves while its row is being written has the row taken back.
 */
export class NewRuns {
  private readonly byLane = new Map<string, ClusterEntry[]>();
  private batch: ClusterEntry[] = [];
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: {
      db: ClusterDb;
      entries: ReadonlyMap<number, ClusterEntry>;
      /** The lane's new rows may wait for its claim pass (false: a grouped lane). */
      folds(lane: string): boolean;
      /** Runs (or asks for) the lane's next claim pass. */
      claim(lane: string): void;
      /** A task whose row could not be written: it fails, and may be sent again. */
      fail(entry: ClusterEntry, error: TillerError): void;
      track(what: string, work: Promise<unknown>): void;
    },
  ) {}

  /** Enqueues a task with the others of this tick. */
  push(entry: ClusterEntry): void {
    this.batch.push(entry);
    if (this.batch.length === 1) queueMicrotask(() => this.flush());
  }

  /** Enqueues tasks again at once (their rows were dropped). */
  again(entries: readonly ClusterEntry[]): void {
    this.batch.push(...entries);
    this.flush();
  }

  /** Resolves once every batch so far is written or handed to its lane's pass. */
  get settled(): Promise<void> {
    return this.chain;
  }

  private flush(): void {
    const batch = this.batch;
    // Flushed already (`again` takes the tick's batch with it).
    if (batch.length === 0) return;
    this.batch = [];
    const lane = batch[0]!.lane;
    if (this.deps.folds(lane) && batch.every((entry) => entry.lane === lane)) {
      this.chain = this.chain.then(() => {
        const list = this.byLane.get(lane);
        if (list) list.push(...batch);
        else this.byLane.set(lane, batch);
        this.deps.claim(lane);
      });
      return;
    }
    this.chain = this.chain.then(() => this.insert(batch));
  }

  private async insert(batch: readonly ClusterEntry[]): Promise<void> {
    const live = batch.filter((entry) => entry.isWaiting);
    if (live.length === 0) return;
    try {
      for (const { rowId, localId } of await this.deps.db.enqueue(live)) {
        const entry = this.deps.entries.get(localId);
        if (!entry) continue;
        entry.rowId = rowId;
        if (!entry.isWaiting) this.taken(rowId);
      }
    } catch (cause) {
      for (const entry of live) if (entry.isWaiting) this.deps.fail(entry, enqueueFailed(cause));
      return;
    }
    for (const lane of new Set(live.map((e) => e.lane))) this.deps.claim(lane);
  }

  /**
   * Runs the lane's claim `pass` with its tasks still waiting for a row; answers what it answered. The
   * pass sets the row of each task it wrote. A pass that fails fails the tasks it did not write; one
   * refused (undefined: rolled back) keeps them, first, for the next pass.
   */
  async pass<T>(lane: string, pass: (news: readonly ClusterEntry[]) => Promise<T | undefined>) {
    const news = (this.byLane.get(lane) ?? []).filter((entry) => entry.isWaiting);
    this.byLane.delete(lane);
    let result: T | undefined;
    try {
      result = await pass(news);
    } catch (cause) {
      for (const entry of news)
        if (entry.isWaiting && entry.rowId === undefined) this.deps.fail(entry, enqueueFailed(cause));
      throw cause;
    }
    for (const entry of news) if (!entry.isWaiting && entry.rowId !== undefined) this.taken(entry.rowId);
    const unwritten = news.filter((entry) => entry.rowId === undefined);
    if (result === undefined && unwritten.length > 0)
      this.byLane.set(lane, [...unwritten, ...(this.byLane.get(lane) ?? [])]);
    return result;
  }

  /** Takes back the row of a task that left while the row was being written (a grant is given back). */
  private taken(rowId: string): void {
    this.deps.track("dequeue", this.deps.db.dequeue([rowId]));
  }
}

const enqueueFailed = (cause: unknown) =>
  new TillerError("STORE_FAILED", "could not enqueue in the cluster lanes", { retryable: true, cause });
