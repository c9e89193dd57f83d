import type { RecordBody, TranscriptHead, TranscriptRecord, TranscriptStore } from "./adapters/store.js";

/**
 * The gateway's one writer per session: remembers each transcript's head (session id and revision) and
 * presents it on every append, so a writer that fell behind a reset is refused by the store.
 * Tracks writes in flight, so a simulation knows when real I/O is still pending.
 *
 * @example
 * ```ts
 * const writer = new TranscriptWriter(store);
 * await writer.append("telegram:42", [{ role: "user", text: "hi", messageId: "m1" }]);
 * ```
 */
export class TranscriptWriter {
  private readonly heads = new Map<string, Promise<TranscriptHead>>();
  private readonly lastSeqs = new Map<string, number>();
  /** Per run: how many journal items are stored (or being stored). */
  private readonly journalStored = new Map<string, number>();
  private inFlight = 0;

  constructor(readonly store: TranscriptStore) {}

  get isBusy(): boolean {
    return this.inFlight > 0;
  }

  async append(session: string, records: RecordBody[]): Promise<TranscriptRecord[]> {
    if (records.length === 0) return [];
    return this.track(async () => {
      const head = await this.head(session);
      const stored = await this.store.append(session, records, head);
      const last = stored.at(-1);
      if (last) this.lastSeqs.set(session, last.seq);
      return stored;
    });
  }

  async readWindow(session: string): Promise<TranscriptRecord[]> {
    return this.track(async () => {
      await this.head(session);
      return this.store.readWindow(session);
    });
  }

  async reset(session: string): Promise<void> {
    await this.track(async () => {
      const head = await this.head(session);
      const next = this.store.reset(session, head);
      this.heads.set(session, next);
      await next;
    });
  }

  /**
   * Appends a run's journal items from `offset` on, skipping any this writer already stored for the
   * run: an actor stopped after its write (an interrupt) never reported it, and the run's end must
   * not store the same items twice.
   */
  async appendJournal(session: string, runId: string, offset: number, items: RecordBody[]): Promise<void> {
    const stored = this.journalStored.get(runId) ?? 0;
    const fresh = items.slice(Math.max(0, stored - offset));
    if (fresh.length === 0) return;
    this.journalStored.set(runId, offset + items.length);
    try {
      await this.append(session, fresh);
    } catch (error) {
      this.journalStored.set(runId, stored);
      throw error;
    }
  }

  /** The run ended: its journal bookkeeping is no longer needed. */
  endJournal(runId: string): void {
    this.journalStored.delete(runId);
  }

  /** Saves a session's resume state (atomic in the store); counted as I/O in flight. */
  async saveState(session: string, state: unknown): Promise<void> {
    await this.track(() => this.store.saveState(session, state));
  }

  /** seq of the last record this writer appended for the session (0 when none). */
  lastSeq(session: string): number {
    return this.lastSeqs.get(session) ?? 0;
  }

  /** Compaction: a new context window starts at the end of the transcript; history stays readable. */
  async rotate(session: string): Promise<void> {
    await this.track(async () => {
      const head = await this.head(session);
      const next = this.store.rotate(session, head);
      this.heads.set(session, next);
      await next;
    });
  }

  /** Drops cached heads (after a restart the store is the truth). */
  forget(session: string): void {
    this.heads.delete(session);
  }

  private head(session: string): Promise<TranscriptHead> {
    let head = this.heads.get(session);
    if (!head) {
      head = this.store.open(session);
      this.heads.set(session, head);
      head.catch(() => this.heads.delete(session));
    }
    return head;
  }

  private async track<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight++;
    try {
      return await work();
    } finally {
      this.inFlight--;
    }
  }
}
