import type { LaneEntryState } from "../../machines/lane-entry.machine.js";
import type { TimerHandle } from "../../ports/clock.js";

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

  get isWaiting(): boolean {
    return this.state === "waitingForSlot" || this.state === "waitingForSession";
  }
}
