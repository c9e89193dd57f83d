import type { Subscription } from "xstate";
import type { Clock } from "../adapters/clock.js";
import type { GatewayConfig } from "../config.js";
import type { Logger } from "../logger.js";
import type { SessionActorRef } from "../machines/session.machine.js";
import type { PersistedSession } from "../policy/plan-resume.js";
import type { QueueSettings } from "../policy/queue-mode.js";
import type { TranscriptWriter } from "./transcript-writer.js";

/** What the gateway keeps per session key, including while the session's actor is stopped. */
export interface SessionMemory {
  actor: SessionActorRef | null;
  subscription: Subscription | null;
  channel: string;
  override: QueueSettings | null;
  seen: Map<string, number>;
  /** Stored message ids loaded into `seen` (once per process). */
  known?: Promise<void>;
  turnSeq: number;
  /** What the last save was made from (references), whether it saved "nothing", and the save in flight. */
  savedFrom: { pending: unknown; queue: unknown; summaries: unknown; runId: string | null } | null;
  savedEmpty: boolean;
  /** The newest state not yet handed to the store (undefined: none waiting; null: "nothing to resume"). */
  unsaved?: PersistedSession | null | undefined;
  saving: Promise<void>;
}

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
      emit(type: string, fields: Record<string, unknown>): void;
    },
  ) {}

  /**
   * Saves what a restart needs (the turn in progress, the queue) whenever it changes. Changes within one
   * step (a message that starts a turn and is granted its lane at once) are saved together, at the end
   * of the step or when `flush` asks. Saves of one session are chained, so the file always ends at the
   * newest state.
   */
  persist(key: string, entry: SessionMemory, snapshot: ReturnType<SessionActorRef["getSnapshot"]>): void {
    const { context } = snapshot;
    const inTurn = typeof snapshot.value === "object" && "turn" in snapshot.value;
    const pending = inTurn ? context.pending : null;
    const runId = inTurn ? context.runId : null;
    // Machine context is never changed in place, so unchanged references mean an unchanged state.
    const last = entry.savedFrom;
    if (
      last &&
      last.pending === pending &&
      last.queue === context.queue &&
      last.summaries === context.summaries &&
      last.runId === runId
    ) {
      return;
    }
    entry.savedFrom = { pending, queue: context.queue, summaries: context.summaries, runId };
    const state: PersistedSession | null =
      pending || context.queue.length > 0
        ? {
            version: 1,
            turnSeq: context.turnSeq,
            runId,
            pending,
            queue: context.queue,
            summaries: context.summaries,
          }
        : null;
    const scheduled = entry.unsaved !== undefined;
    entry.unsaved = state;
    if (!scheduled) queueMicrotask(() => this.flush(key, entry));
  }

  /** Starts saving the newest unsaved state now; `entry.saving` settles when it is durable. */
  flush(key: string, entry: SessionMemory): void {
    const state = entry.unsaved;
    if (state === undefined) return;
    entry.unsaved = undefined;
    if (state === null && entry.savedEmpty) return;
    entry.savedEmpty = state === null;
    entry.saving = entry.saving
      .then(() => this.deps.writer.saveState(key, state))
      .catch((error: unknown) => {
        this.deps.logger.error({ session: key, error: String(error) }, "state.saveFailed");
        this.deps.emit("state.saveFailed", { session: key, error: String(error) });
      });
  }

  /**
   * The first message a process sees for a session learns which message ids the transcript already
   * holds, so a channel's redelivery after a restart is a duplicate, not a second answer.
   */
  rememberStoredIds(key: string, entry: SessionMemory): Promise<void> {
    entry.known ??= this.deps.writer.readWindow(key).then(
      (records) => {
        const since = this.deps.clock.now() - this.deps.config.limits.dedupeWindowMs;
        const stored = records.filter((record) => record.role === "user" && record.at >= since);
        // Keep arrival order: pruning stops at the first id inside the window.
        const merged = new Map<string, number>();
        for (const record of stored) if (record.role === "user") merged.set(record.messageId, record.at);
        for (const [id, at] of entry.seen) if (!merged.has(id)) merged.set(id, at);
        entry.seen = new Map([...merged].sort((a, b) => a[1] - b[1]));
      },
      (error: unknown) => this.deps.logger.warn({ session: key, error: String(error) }, "dedupe.loadFailed"),
    );
    return entry.known;
  }
}
