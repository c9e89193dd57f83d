import type { LaneEntryState } from "../../machines/lane-entry.machine.js";
import { priorityLevel } from "../../policy/lane-priority.js";
import type { TimerHandle } from "../../ports/clock.js";
import { inContextOfCaller } from "../entry.js";
import type { RunOptions } from "../lane-scheduler.types.js";

/** One task of this process in the cluster lanes: its local promise, and its row once enqueued. */
export class ClusterEntry {
  state: LaneEntryState = "waitingForSlot";
  /** The `lane_runs` row (a bigint, as text), once the enqueue committed. */
  rowId: string | undefined;
  /** The fencing token of its grant. */
  fence: number | undefined;
  /** Local time by which the lease is surely renewed or lost (sent-time of the last grant or renewal + lease). */
  leaseDeadline = 0;
  /** Heartbeat generation when it started: a renewal sent before the start cannot have renewed it. */
  startedInGeneration = 0;
  controller: AbortController | null = null;
  timeoutTimer: TimerHandle | null = null;
  onAbort: (() => void) | null = null;
  /** After its timeout, how long it may take to stop before its slot is freed anyway. */
  abortGraceMs = 0;
  /** Past its deadline and told to stop: it still holds its row (its state stays `running`). */
  stopping = false;
  /** Reported as waiting too long (`lane.waitExceeded`): reported again as it starts. */
  warned = false;

  constructor(
    readonly id: number,
    readonly lane: string,
    /** The key its row carries: the caller's session, or a key of its own when it has none. */
    readonly sessionKey: string,
    readonly session: string | undefined,
    readonly priorityLevel: 0 | 1 | 2,
    readonly task: (signal: AbortSignal) => unknown,
    readonly resolve: (value: unknown) => void,
    readonly reject: (reason: unknown) => void,
    readonly enqueuedAt: number,
    readonly timeoutMs: number | undefined,
    readonly callerSignal: AbortSignal | undefined,
  ) {}

  /** The entry of a `run()` call of this process, enqueued at `now`; `id` is unique in the process. */
  static forRun(
    id: number,
    processId: string,
    options: RunOptions,
    task: (signal: AbortSignal) => unknown,
    settle: { resolve: (value: unknown) => void; reject: (reason: unknown) => void },
    now: number,
  ): ClusterEntry {
    const entry = new ClusterEntry(
      id,
      options.lane ?? "main",
      // A task without a session gets a key no session can have (keys carry no control characters).
      options.session ?? `\u0001task:${processId}:${id}`,
      options.session,
      priorityLevel(options.priority ?? "normal"),
      // Started later, from a grant's poll: it keeps the async context (AsyncLocalStorage) of the call.
      inContextOfCaller(task),
      settle.resolve,
      settle.reject,
      now,
      options.timeoutMs,
      options.signal,
    );
    if (options.abortGraceMs) entry.abortGraceMs = options.abortGraceMs;
    return entry;
  }

  /** Its state as the lane entry machine names it (`stopping` while it stops after its deadline). */
  get reportedState(): LaneEntryState {
    return this.stopping && this.state === "running" ? "stopping" : this.state;
  }

  get isWaiting(): boolean {
    return this.state === "waitingForSlot" || this.state === "waitingForSession";
  }
}
