import type { Subscription } from "xstate";
import type { TranscriptWriter } from "../../adapters/transcript-writer.js";
import type { GatewayConfig } from "../../config.js";
import type { EmitEvent } from "../../events.js";
import type { Logger } from "../../logger.js";
import type { SessionActorRef } from "../../machines/session.machine.js";
import type { PersistedSession } from "../../policy/plan-resume.js";
import type { QueueSettings } from "../../policy/queue-mode.js";
import { type Clock, sleep } from "../../ports/clock.js";
import type { TranscriptRecord } from "../../ports/store.js";
import { SeenIds } from "./seen-ids.js";

/** What the gateway keeps per session key, including while the session's actor is stopped. */
export interface SessionMemory {
  actor: SessionActorRef | null;
  subscription: Subscription | null;
  channel: string;
  override: QueueSettings | null;
  /** The ids accepted within the dedupe window (a redelivery of one is acked `duplicate`). */
  seen: SeenIds;
  /**
   * Accepted ids (with arrival times) no user record of the transcript holds yet: saved with the state,
   * so a restart still knows them (the stored ones it reads back from the transcript).
   */
  unstored?: Map<string, number>;
  /** Bumped when `unstored` changes, so a save notices. */
  unstoredVersion?: number;
  /** Stored message ids loaded into `seen` (once per process). */
  known?: Promise<void>;
  turnSeq: number;
  /** What the last save was made from (references), whether it saved "nothing", and the save in flight. */
  savedFrom: {
    pending: unknown;
    queue: unknown;
    summaries: unknown;
    runId: string | null;
    override?: unknown;
    unstoredVersion?: number;
  } | null;
  /** The queue and summaries of the last state saved (a control saved while no actor runs keeps them). */
  lastQueue?: PersistedSession["queue"];
  lastSummaries?: string[];
  savedEmpty: boolean;
  /**
   * The last state handed to the store, without its unstored ids (as JSON), and those ids: a state
   * that says the same, its unstored ids a subset, is not saved again. Undefined: save the next one.
   */
  savedAs?: { json: string; unstored: ReadonlySet<string> } | undefined;
  /** The newest state not yet handed to the store (undefined: none waiting; null: "nothing to resume"). */
  unsaved?: PersistedSession | null | undefined;
  saving: Promise<void>;
  /** Message ids a durable saved state holds (so their turn may store them in the transcript). */
  covered?: Set<string>;
  /** Turns waiting for ids to be covered before they store them. */
  coverWaiters?: Array<{ ids: string[]; resolve: () => void }>;
  /** Ids whose state could not be saved even after retries: their ack says so. */
  notDurable?: Set<string>;
}

/**
 * The promise a session's `saving` and `known` fall back to once theirs settled: an idle session would
 * otherwise keep a settled promise of its own for each (there are as many idle sessions as users).
 */
export const SETTLED: Promise<void> = Promise.resolve();

/** The empty queue and summaries a retired session keeps (see {@link SessionPersistence.compact}). */
const NO_QUEUE: PersistedSession["queue"] = [];
const NO_SUMMARIES: string[] = [];
Object.freeze(NO_QUEUE);
Object.freeze(NO_SUMMARIES);
/** What the last save of a session with nothing to resume was made from (see `compact`). */
const SAVED_FROM_NOTHING: NonNullable<SessionMemory["savedFrom"]> = {
  pending: null,
  queue: NO_QUEUE,
  summaries: NO_SUMMARIES,
  runId: null,
  override: null,
  unstoredVersion: 0,
};
Object.freeze(SAVED_FROM_NOTHING);

/** Attempts at a state save before it counts as failed, and the pause before each retry (ms). */
const SAVE_RETRIES_MS = [20, 100, 500];

/**
 * The durable side of sessions: resume state saved on every change, and the message ids a transcript
 * already holds (for duplicate detection across restarts).
 */
export class SessionPersistence {
  constructor(
    private readonly deps: {
      writer: TranscriptWriter;
      clock: Clock;
      config: GatewayConfig;
      logger: Logger;
      emit: EmitEvent;
      /** What the stored records say, for explain() after a restart. */
      onStoredRecords?(session: string, records: readonly TranscriptRecord[]): void;
    },
  ) {}

  /**
   * Resolves once every id is held by a durable saved state (or its save failed for good), so a turn
   * never stores a message in the transcript before a restart would know who answers it: a message is
   * either accepted (the restart answers it) or not (a retry runs it), never stored and dead.
   */
  covered(entry: SessionMemory, ids: readonly string[]): Promise<void> {
    const covered = entry.covered;
    if (ids.every((id) => covered?.has(id))) return Promise.resolve();
    return new Promise((resolve) => {
      entry.coverWaiters ??= [];
      entry.coverWaiters.push({ ids: [...ids], resolve });
    });
  }

  /**
   * Saves what a restart needs (the turn in progress, the queue) whenever it changes. Changes within one
   * step (a message that starts a turn and is granted its lane at once) are saved together, at the end
   * of the step or when `flush` asks. Saves of one session are chained, so the file always ends at the
   * newest state.
   */
  persist(key: string, entry: SessionMemory, snapshot?: ReturnType<SessionActorRef["getSnapshot"]>): void {
    const context = snapshot?.context;
    const inTurn = typeof snapshot?.value === "object" && "turn" in snapshot.value;
    const pending = inTurn ? (context?.pending ?? null) : null;
    const runId = inTurn ? (context?.runId ?? null) : null;
    const queue = context?.queue ?? entry.lastQueue ?? [];
    const summaries = context?.summaries ?? entry.lastSummaries ?? [];
    const override = entry.override;
    const unstoredVersion = entry.unstoredVersion ?? 0;
    // Machine context is never changed in place, so unchanged references mean an unchanged state.
    const last = entry.savedFrom;
    if (
      last &&
      last.pending === pending &&
      last.queue === queue &&
      last.summaries === summaries &&
      last.runId === runId &&
      last.override === override &&
      (last.unstoredVersion ?? 0) === unstoredVersion
    ) {
      return;
    }
    entry.savedFrom = { pending, queue, summaries, runId, override, unstoredVersion };
    const unstored = this.unstoredIds(entry);
    entry.lastQueue = queue;
    entry.lastSummaries = summaries;
    const state: PersistedSession | null =
      pending || queue.length > 0 || override || unstored.length > 0
        ? {
            version: 1,
            turnSeq: context?.turnSeq ?? entry.turnSeq,
            runId,
            pending,
            queue,
            summaries,
            ...(override ? { override } : {}),
            ...(unstored.length > 0 ? { unstored } : {}),
          }
        : null;
    const scheduled = entry.unsaved !== undefined;
    entry.unsaved = state;
    if (!scheduled) queueMicrotask(() => this.flush(key, entry));
  }

  /** Notes an accepted id the transcript does not hold yet (it is saved with the next state). */
  accepted(entry: SessionMemory, id: string, at: number): void {
    entry.unstored ??= new Map();
    entry.unstored.set(id, at);
    entry.unstoredVersion = (entry.unstoredVersion ?? 0) + 1;
  }

  /** An id turned away after all (a full queue): it may come again and is not a duplicate then. */
  forget(entry: SessionMemory, id: string): boolean {
    if (entry.unstored?.delete(id)) {
      entry.unstoredVersion = (entry.unstoredVersion ?? 0) + 1;
      // Saved without it even if nothing else changes: a restart must not take it for a duplicate.
      entry.savedAs = undefined;
      this.dropEmptyUnstored(entry);
    }
    return entry.seen.delete(id);
  }

  /** The transcript now holds these user messages: the state need not carry their ids any more. */
  stored(key: string, entry: SessionMemory, ids: readonly string[]): void {
    let changed = false;
    for (const id of ids) changed = entry.unstored?.delete(id) === true || changed;
    if (!changed) return;
    entry.unstoredVersion = (entry.unstoredVersion ?? 0) + 1;
    this.dropEmptyUnstored(entry);
    this.persist(key, entry, entry.actor?.getSnapshot());
  }

  /** An idle session keeps no empty map: there are as many of them as sessions. */
  private dropEmptyUnstored(entry: SessionMemory): void {
    if (entry.unstored?.size === 0) entry.unstored = undefined;
  }

  /** The unstored ids still inside the dedupe window, oldest first. */
  private unstoredIds(entry: SessionMemory): Array<[string, number]> {
    if (!entry.unstored || entry.unstored.size === 0) return [];
    const since = this.deps.clock.now() - this.deps.config.limits.dedupeWindowMs;
    for (const [id, at] of entry.unstored) if (at < since) entry.unstored.delete(id);
    return [...entry.unstored].sort((a, b) => a[1] - b[1]);
  }

  /** Starts saving the newest unsaved state now; `entry.saving` settles when it is durable. */
  flush(key: string, entry: SessionMemory): void {
    const state = entry.unsaved;
    if (state === undefined) return;
    entry.unsaved = undefined;
    if (state === null && entry.savedEmpty) return;
    if (state !== null && sameAsSaved(entry, state)) return;
    entry.savedEmpty = state === null;
    entry.savedAs = state === null ? undefined : savedForm(state);
    const ids = state ? stateIds(state) : [];
    const saving = entry.saving
      .then(() => this.saveWithRetries(key, state))
      .then(
        () => {
          // "Nothing to resume" covers nothing: an idle session keeps no empty set (one per session).
          if (state === null) entry.covered = undefined;
          else {
            entry.covered ??= new Set();
            for (const id of ids) entry.covered.add(id);
          }
          // The newest state is durable: whatever an earlier failed save left out is either in it or
          // no longer needed (its turn ended).
          entry.notDurable = undefined;
          this.wake(entry, false);
        },
        (error: unknown) => {
          // Not durable: the next state is saved even if it says the same.
          entry.savedAs = undefined;
          this.deps.logger.error({ session: key, error: String(error) }, "state.saveFailed");
          this.deps.emit("state.saveFailed", { session: key, error: String(error) });
          entry.notDurable ??= new Set();
          for (const id of ids) if (!entry.covered?.has(id)) entry.notDurable.add(id);
          // A store that keeps failing fails the turn's own writes too; waiting longer would only hang it.
          this.wake(entry, true);
        },
      );
    entry.saving = saving;
    void saving.then(() => {
      if (entry.saving === saving) entry.saving = SETTLED;
    });
  }

  /**
   * What a session whose actor stopped keeps, in a smaller form: a last save made from nothing as one
   * shared description, and else the empty queue and summaries as the shared empty arrays (the
   * saved-from references follow, so no save is due from it). Every idle session has these.
   */
  compact(entry: SessionMemory): void {
    const last = entry.savedFrom;
    if (
      last &&
      last.pending === null &&
      last.runId === null &&
      last.override === null &&
      entry.override === null &&
      entry.unstored === undefined &&
      entry.lastQueue?.length === 0 &&
      entry.lastSummaries?.length === 0 &&
      last.queue === entry.lastQueue &&
      last.summaries === entry.lastSummaries &&
      (last.unstoredVersion ?? 0) === (entry.unstoredVersion ?? 0)
    ) {
      // Saved from nothing: one shared description of that, and a version count started again.
      entry.savedFrom = SAVED_FROM_NOTHING;
      entry.lastQueue = NO_QUEUE;
      entry.lastSummaries = NO_SUMMARIES;
      entry.unstoredVersion = undefined;
      return;
    }
    if (entry.lastQueue?.length === 0 && entry.lastQueue !== NO_QUEUE) {
      if (last?.queue === entry.lastQueue) last.queue = NO_QUEUE;
      entry.lastQueue = NO_QUEUE;
    }
    if (entry.lastSummaries?.length === 0 && entry.lastSummaries !== NO_SUMMARIES) {
      if (last?.summaries === entry.lastSummaries) last.summaries = NO_SUMMARIES;
      entry.lastSummaries = NO_SUMMARIES;
    }
  }

  /** A state save, retried a few times (a full disk that frees up, a slow fsync) before it fails. */
  private async saveWithRetries(key: string, state: PersistedSession | null): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.deps.writer.saveState(key, state);
        return;
      } catch (error) {
        const pause = SAVE_RETRIES_MS[attempt];
        if (pause === undefined) throw error;
        this.deps.emit("state.saveRetried", { session: key, attempt: attempt + 1, error: String(error) });
        await sleep(this.deps.clock, pause);
      }
    }
  }

  private wake(entry: SessionMemory, all: boolean): void {
    const waiters = entry.coverWaiters;
    if (!waiters || waiters.length === 0) return;
    const left = waiters.filter((waiter) => {
      if (!all && !waiter.ids.every((id) => entry.covered?.has(id))) return true;
      waiter.resolve();
      return false;
    });
    // No empty array left behind: every session that ever waited would keep one.
    entry.coverWaiters = left.length > 0 ? left : undefined;
  }

  /**
   * The records whose user message ids count as seen: the context window, and after a `/new` every
   * revision (a redelivered id from before the reset is still a duplicate).
   */
  private async storedRecords(key: string): Promise<readonly TranscriptRecord[]> {
    const window = await this.deps.writer.readWindow(key);
    if (this.deps.writer.revision(key) <= 1) return window;
    return this.deps.writer.read(key);
  }

  /**
   * The first message a process sees for a session learns which message ids the transcript already
   * holds, so a channel's redelivery after a restart is a duplicate, not a second answer.
   */
  rememberStoredIds(key: string, entry: SessionMemory): Promise<void> {
    if (entry.known) return entry.known;
    const known = this.storedRecords(key).then(
      (records) => {
        this.deps.onStoredRecords?.(key, records);
        const since = this.deps.clock.now() - this.deps.config.limits.dedupeWindowMs;
        const stored = records.filter((record) => record.role === "user" && record.at >= since);
        // Keep arrival order: pruning stops at the first id inside the window.
        const merged = new Map<string, number>();
        for (const record of stored) if (record.role === "user") merged.set(record.messageId, record.at);
        for (const [id, at] of entry.seen) if (!merged.has(id)) merged.set(id, at);
        entry.seen = SeenIds.from([...merged].sort((a, b) => a[1] - b[1]));
      },
      (error: unknown) => this.deps.logger.warn({ session: key, error: String(error) }, "dedupe.loadFailed"),
    );
    entry.known = known;
    void known.then(() => {
      if (entry.known === known) entry.known = SETTLED;
    });
    return known;
  }
}

/** The message ids a saved state holds (the turn in progress and everything queued). */
export function stateIds(state: PersistedSession): string[] {
  const ids: string[] = [];
  for (const item of [...(state.pending ? [state.pending] : []), ...state.queue])
    if ("messages" in item) for (const message of item.messages) ids.push(message.id);
  return ids;
}

/** What `sameAsSaved` compares: the state without its unstored ids, and those ids. */
function savedForm(state: PersistedSession): { json: string; unstored: ReadonlySet<string> } {
  const { unstored, ...rest } = state;
  return { json: JSON.stringify(rest), unstored: new Set((unstored ?? []).map(([id]) => id)) };
}

/**
 * The state says what the last one handed to the store says, but for unstored ids the transcript has
 * taken in since (ids the state carries needlessly change nothing on a restart: the transcript holds
 * them too). Such a save, one per turn when its user message is stored and again when the turn ends
 * with fresh references to the same values, would cost a durable write for nothing.
 */
function sameAsSaved(entry: SessionMemory, state: PersistedSession): boolean {
  const saved = entry.savedAs;
  if (saved === undefined) return false;
  const now = savedForm(state);
  if (now.json !== saved.json) return false;
  for (const id of now.unstored) if (!saved.unstored.has(id)) return false;
  return true;
}
