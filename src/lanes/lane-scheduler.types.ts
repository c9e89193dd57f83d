import type { Actor, InspectionEvent } from "xstate";
import type { LaneEvent, TillerEvent } from "../events.js";
import type { Logger } from "../logger.js";
import type { LaneEntryState } from "../machines/lane-entry.machine.js";
import type { laneSchedulerMachine } from "../machines/lane-scheduler.machine.js";
import type { Priority } from "../policy/lane-priority.js";
import type { Clock } from "../ports/clock.js";
import type { LaneGroupOptions } from "./lane-groups.js";

// The lane scheduler's public shapes (the public API in README.md).

/** Options of {@link createLaneScheduler}: the clock, each workload lane's capacity, aging and wait warnings. */
export interface LaneSchedulerOptions {
  /**
   * Capacity per workload lane. Unconfigured lanes get 1.
   * @default { main: max(8, 4 × CPUs) }
   */
  capacity?: Record<string, number>;
  /**
   * Capacity groups: each caps the tasks running at once in its lanes, all lanes together (each lane
   * keeps its own capacity too). A lane belongs to at most one group.
   * @default {} (no groups)
   * @example { background: { capacity: 2, lanes: ["cron", "subagent"] } }
   */
  groups?: Record<string, LaneGroupOptions>;
  /** A waiting entry emits `lane.waitExceeded` after this long, in ms. @default 2000 */
  warnAfterMs?: number;
  /**
   * A waiting entry rises one priority level for every `agingMs` it waits for a slot, so background work
   * waits a bounded time under any foreground load; 0 keeps priorities strict.
   * @default 60000
   */
  agingMs?: number;
  /** @default a `SystemClock` */
  clock?: Clock;
  /** @default a logger that writes nothing */
  logger?: Logger;
  /** Receives every `lane.*` decision. */
  onEvent?: (event: LaneEvent) => void;
  /**
   * Whether `onEvent` reads the per-task events (`lane.enqueued`, `lane.started`, `lane.ended`) now;
   * while it returns false they are not built. Every other `lane.*` event always reaches `onEvent`.
   * @default () => true
   */
  isObserved?: () => boolean;
  /** XState inspection of the scheduler's admission machine. */
  inspect?: (event: InspectionEvent) => void;
}

/** Where and how one task runs on the lane scheduler: its session lane, workload lane, priority and timeout. */
export interface RunOptions {
  /** Session key: the task waits in `session:<key>` first; one task per session runs at a time. */
  session?: string;
  /** Workload lane. @default "main" */
  lane?: string;
  /** Where the task waits among others of its workload lane. @default "normal" */
  priority?: Priority;
  /**
   * The task's deadline: once it has run this long its signal aborts, and the caller rejects with
   * LaneTimeoutError when its slot is freed (see `abortGraceMs`).
   * @default none (no deadline)
   */
  timeoutMs?: number;
  /**
   * After `timeoutMs`, how long the task may take to stop: its slot is freed when it settles or this
   * long after the abort, whichever comes first (then `lane.abortGraceExceeded` reports a task that
   * did not stop). 0 frees the slot at the deadline.
   * @default 0
   */
  abortGraceMs?: number;
  /** Aborting removes a waiting entry, or is passed on to a running task. */
  signal?: AbortSignal;
}

/** What the lane scheduler holds now: active and queued tasks and the capacity of each workload lane. */
export interface LaneSnapshot {
  lanes: Record<string, { active: number; queued: number; capacity: number }>;
  /** Capacity groups, when any is configured: tasks running in the group's lanes, waiting, and its budget. */
  groups?: Record<string, { active: number; queued: number; capacity: number; lanes: string[] }>;
}

/** Session lanes nested in capacity-limited workload lanes: one task per session, priorities, clear, drain. */
export interface LaneScheduler {
  run<T>(options: RunOptions, task: (signal: AbortSignal) => T | Promise<T>): Promise<T>;
  clear(lane: string): number;
  setCapacity(lane: string, capacity: number): void;
  drain(): Promise<void>;
  resume(): void;
  snapshot(): LaneSnapshot;
  /** Whether `drain()` was called and `resume()` was not. */
  readonly isDraining: boolean;
  /** Tasks running now, across all lanes. */
  readonly activeCount: number;
  /** Tasks waiting now, across all lanes. */
  readonly queuedCount: number;
  /** Where a task stands, by the id `lane.enqueued` reported; undefined once forgotten. */
  entryState(entryId: number): LaneEntryState | undefined;
  /** Adds a receiver of every `lane.*` decision (besides `onEvent`); returns the unsubscribe. */
  observe?(listener: (event: TillerEvent) => void): () => void;
  /** The admission machine's actor, for inspection. */
  readonly actor: Actor<typeof laneSchedulerMachine>;
}
