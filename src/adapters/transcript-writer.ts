import type { RecordBody, TranscriptHead, TranscriptRecord, TranscriptStore } from "../ports/store.js";

/**
 * The gateway's one writer per session: remembers each transcript's head (session id and revision) and
 * presents it on every append, so a writer that fell behind a reset is refused by the store.
 * Tracks writes in flight, so a simulation knows when real I/O is still pending.
 *
 * Keeps the context window of sessions it is told are live (`keepWindow`): each turn starts from the
 * window, and re-reading it from the store would cost every turn time in the window's length. The cache
 * only ever holds what the store acknowledged, in seq order; any doubt (a reset, a rotation, a gap) drops
 * it and the next read goes to the store again.
 *
 * @example
 * ```ts
 * const writer = new TranscriptWriter(store);
 * await writer.append("telegram:42", [{ role: "user", text: "hi", messageId: "m1" }]);
 * ```
 */
export class TranscriptWriter {
  /**
   * What the writer knows of each session's transcript, in one small object per session: the gateway
   * keeps one for every session it has seen, idle ones included (a map per field cost an entry each).
   */
  private readonly sessions = new Map<string, WriterSession>();
  /** Per run: how many journal items are stored (or being stored). */
  private readonly journalStored = new Map<string, number>();
  private inFlight = 0;
  /** Windows of live sessions, as the store returned them (shared: callers must not change them). */
  private readonly windows = new Map<string, TranscriptRecord[]>();
  /** seq a cached window continues from when it holds no record yet. */
  private readonly windowStartSeq = new Map<string, number>();
  /** Sessions whose window is worth keeping; others are read from the store each time. */
  private readonly kept = new Set<string>();
  /** Appends in flight per session: a window read while one is pending may miss it, so is not kept. */
  private readonly appending = new Map<string, number>();

  /** Told of every append the store acknowledged (the gateway learns which messages are stored). */
  onStored: ((session: string, records: readonly TranscriptRecord[]) => void) | undefined;

  constructor(readonly store: TranscriptStore) {}

  get isBusy(): boolean {
    return this.inFlight > 0;
  }

  async append(session: string, records: RecordBody[]): Promise<TranscriptRecord[]> {
    if (records.length === 0) return [];
    this.appending.set(session, (this.appending.get(session) ?? 0) + 1);
    try {
      return await this.track(async () => {
        await this.repaired(session);
        const head = await this.head(session);
        const stored = await this.store.append(session, records, head);
        this.onStored?.(session, stored);
        const last = stored.at(-1);
        if (last) this.session(session).lastSeq = last.seq;
        this.extendWindow(session, stored);
        return stored;
      });
    } catch (error) {
      this.dropWindow(session);
      throw error;
    } finally {
      const left = (this.appending.get(session) ?? 1) - 1;
      if (left === 0) this.appending.delete(session);
      else this.appending.set(session, left);
    }
  }

  /** The stored sessions' keys (those starting with `prefix`); counted as I/O in flight. */
  storedSessions(prefix?: string): Promise<string[]> {
    return this.track(() => this.store.sessions(prefix));
  }

  /** The session's current context window; the records are shared and must not be changed. */
  async readWindow(session: string): Promise<readonly TranscriptRecord[]> {
    const cached = this.windows.get(session);
    if (cached) return cached;
    return this.track(async () => {
      const head = await this.head(session);
      const pendingBefore = this.appending.has(session);
      const records = await this.store.readWindow(session);
      if (this.kept.has(session) && !pendingBefore && !this.appending.has(session)) {
        this.windows.set(session, records);
        // No append is pending, so the transcript ends at the last seq this writer stored (or opened at).
        this.windowStartSeq.set(session, Math.max(head.lastSeq, this.lastSeq(session)));
      }
      return records;
    });
  }

  /** Every record of the session (all revisions), from the store; counted as I/O in flight. */
  read(session: string): Promise<TranscriptRecord[]> {
    return this.track(() => this.store.read(session));
  }

  /** The window without waiting, when it is cached (a live session between turns). */
  cachedWindow(session: string): readonly TranscriptRecord[] | undefined {
    return this.windows.get(session);
  }

  /** Keep (or stop keeping) the session's window in memory: the gateway does while its actor lives. */
  keepWindow(session: string, keep: boolean): void {
    if (keep) this.kept.add(session);
    else {
      this.kept.delete(session);
      this.dropWindow(session);
    }
  }

  /**
   * `/new`: a new revision. A tool call of the old one still without its result (the turn `/new`
   * stops) is closed first: no revision ends with a call left open.
   */
  async reset(session: string): Promise<void> {
    this.dropWindow(session);
    await this.track(async () => {
      await this.repaired(session);
      await this.closeDangling(session, "cut off by /new: the outcome of this call is unknown");
      const head = await this.head(session);
      await this.follow(session, this.store.reset(session, head), true);
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
    return this.sessions.get(session)?.lastSeq ?? 0;
  }

  /** seq of the transcript's last record as far as this process knows: its appends, or the head it opened. */
  length(session: string): number {
    const known = this.sessions.get(session);
    return Math.max(known?.lastSeq ?? 0, known?.opened?.lastSeq ?? 0);
  }

  /** The lifecycle revision of the transcript as opened or reset by this writer (0 when not opened). */
  revision(session: string): number {
    return this.sessions.get(session)?.opened?.revision ?? 0;
  }

  /** Compaction: a new context window starts at the end of the transcript; history stays readable. */
  async rotate(session: string): Promise<void> {
    this.dropWindow(session);
    await this.track(async () => {
      await this.repaired(session);
      const head = await this.head(session);
      await this.follow(session, this.store.rotate(session, head), true);
    });
  }

  /** Drops cached heads (after a restart the store is the truth). */
  forget(session: string): void {
    const known = this.sessions.get(session);
    if (known) {
      known.head = undefined;
      known.isCurrent = false;
      known.repair = undefined;
    }
    this.dropWindow(session);
  }

  private dropWindow(session: string): void {
    this.windows.delete(session);
    this.windowStartSeq.delete(session);
  }

  /** Adds acknowledged records to a cached window, or drops the window when they do not continue it. */
  private extendWindow(session: string, stored: TranscriptRecord[]): void {
    const window = this.windows.get(session);
    if (!window || stored.length === 0) return;
    const last = window.at(-1)?.seq ?? this.windowStartSeq.get(session);
    if (last === undefined || stored[0]!.seq !== last + 1) {
      this.dropWindow(session);
      return;
    }
    window.push(...stored);
  }

  /**
   * Before this process's first write to a transcript: a tool call a dead process left without its
   * result (a crash mid-tool, mid-interrupt) gets one now, before anything else is appended, so no
   * context built from the transcript carries a call without its result (strict providers refuse it).
   * A failed repair is tried again at the next write. `runId`: the run the closing results are
   * stored under (a resumed turn's; default the run of each call).
   */
  repaired(session: string, runId?: string): Promise<void> {
    const known = this.session(session);
    if (known.repair === REPAIRED) return Promise.resolve();
    if (known.repair) return known.repair;
    // Counted as I/O in flight: a resumed turn awaits it outside any other write, and simulated time
    // must not move (nor a run be judged idle) while it reads and appends.
    const repair = this.track(() => this.closeDangling(session, undefined, runId));
    known.repair = repair;
    // Once done, a marker instead of the settled promise (every idle session would keep one).
    repair.then(
      () => {
        if (known.repair === repair) known.repair = REPAIRED;
      },
      () => {
        if (known.repair === repair) known.repair = undefined;
      },
    );
    return repair;
  }

  private async closeDangling(session: string, why?: string, runId?: string): Promise<void> {
    const head = await this.head(session);
    if (Math.max(head.lastSeq, this.lastSeq(session)) === 0) return;
    // A window kept for the session is what the store holds: reading it again would cost a round trip.
    const window = this.windows.get(session) ?? (await this.store.readWindow(session));
    const closing = closingResults(window, why, runId);
    if (closing.length === 0) return;
    const stored = await this.store.append(session, closing, head);
    const last = stored.at(-1);
    if (last) this.session(session).lastSeq = last.seq;
    this.dropWindow(session);
  }

  /** The head to present on writes: opened once, then kept as a value, not as a settled promise. */
  private head(session: string): Promise<TranscriptHead> {
    const known = this.session(session);
    if (known.head) return known.head;
    if (known.isCurrent && known.opened) return Promise.resolve(known.opened);
    return this.follow(session, this.store.open(session), false);
  }

  /**
   * Presents `next` as the head from now on, and keeps its value once it resolves. A failed open is
   * tried again on the next write; a failed reset or rotation stays the head (as the writer always did).
   */
  private follow(
    session: string,
    next: Promise<TranscriptHead>,
    keepFailure: boolean,
  ): Promise<TranscriptHead> {
    const known = this.session(session);
    known.head = next;
    known.isCurrent = false;
    next.then(
      (value) => {
        if (known.head !== next) return;
        known.opened = value;
        known.isCurrent = true;
        known.head = undefined;
      },
      () => {
        if (known.head === next && !keepFailure) known.head = undefined;
      },
    );
    return next;
  }

  private session(session: string): WriterSession {
    let known = this.sessions.get(session);
    if (!known) {
      known = { head: undefined, opened: undefined, isCurrent: false, lastSeq: 0, repair: undefined };
      this.sessions.set(session, known);
    }
    return known;
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

/** A repair that is done (see TranscriptWriter.repaired). */
const REPAIRED = "repaired";

interface WriterSession {
  /** The head being opened (or reset, rotated): presented on writes until it resolves. */
  head: Promise<TranscriptHead> | undefined;
  /** The head once it resolved (kept after `forget` for `revision` and `length`). */
  opened: TranscriptHead | undefined;
  /** `opened` is the head to present (false after `forget`: the next write opens again). */
  isCurrent: boolean;
  /** seq of the last record this writer appended (0 when none). */
  lastSeq: number;
  /** This process's first write closing what a dead process left open (see `repaired`). */
  repair: Promise<void> | typeof REPAIRED | undefined;
}

/** A result for each tool call of the records that has none (its process died before it was stored). */
export function closingResults(
  records: readonly TranscriptRecord[],
  why = "cut off by a restart: the outcome of this call is unknown",
  runId?: string,
): RecordBody[] {
  const open = new Map<string, string>();
  for (const record of records) {
    if (record.role === "toolCall") open.set(record.callId, record.runId);
    if (record.role === "toolResult") open.delete(record.callId);
  }
  return [...open].map(([callId, callRunId]) => ({
    role: "toolResult" as const,
    callId,
    status: "cancelled" as const,
    result: why,
    runId: runId ?? callRunId,
  }));
}
