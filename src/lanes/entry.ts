import { AsyncResource, executionAsyncId } from "node:async_hooks";
import type { LaneEntryState } from "../machines/lane-entry.machine.js";
import type { TimerHandle } from "../ports/clock.js";
import { type Aging, PriorityWaitList, type QueueLinks, type Waiting } from "./wait-list.js";

/**
 * One task in the scheduler. Plain mutable fields on purpose: this is the hot path, and the entry's
 * `state` follows `laneEntryMachine` (the graph tests check that it does). A waiting entry is what a
 * backlog is made of, so it holds only what every entry needs: times are small integers (ms since the
 * scheduler was made, never a boxed heap number), and what only a task with a deadline or a caller's
 * signal needs sits in `extras`, made for those tasks only.
 *
 * It is itself the async resource its task runs in when it had to wait (AsyncLocalStorage: a trace, a
 * request id of the `run()` call): a separate AsyncResource cost a waiting entry one more object and
 * a field pointing at it (docs/decisions.md, "What a waiting entry costs").
 */
export class Entry extends AsyncResource implements Waiting {
  qPrev: QueueLinks | null = null;
  qNext: QueueLinks | null = null;
  /** When it entered the list it waits in now (aging counts from here), on the scheduler's time. */
  waitSince = 0;
  state: LaneEntryState = "waitingForSession";
  sessionLane: SessionLane | null = null;
  /** Its deadline and its caller's signal; null for a task with neither. */
  extras: EntryExtras | null = null;

  constructor(
    readonly id: number,
    readonly lane: WorkloadLane,
    readonly priorityLevel: 0 | 1 | 2,
    readonly task: (signal: AbortSignal) => unknown,
    readonly resolve: (value: unknown) => void,
    readonly reject: (reason: unknown) => void,
    /** On the scheduler's time: ms since it was made. */
    readonly enqueuedAt: number,
  ) {
    // The trigger is the call's own async id, passed as a small integer: left to AsyncResource it is
    // read from a Float64Array and kept as a boxed heap number (16 B more per entry).
    const trigger = executionAsyncId();
    super("tiller.lane", (trigger | 0) === trigger ? trigger | 0 : trigger);
  }

  /** It waits (for its session or for a slot): not started, not ended. */
  get isWaiting(): boolean {
    return this.state === "waitingForSession" || this.state === "waitingForSlot";
  }

  get timeoutMs(): number | undefined {
    return this.extras?.timeoutMs;
  }

  get callerSignal(): AbortSignal | undefined {
    return this.extras?.callerSignal;
  }
}

/** What only a task with a deadline or a caller's signal needs, kept off the entries of all others. */
export class EntryExtras {
  controller: AbortController | null = null;
  timeoutTimer: TimerHandle | null = null;
  /** After its timeout, how long a running task may take to stop before its slot is freed anyway. */
  abortGraceMs = 0;
  onAbort: (() => void) | null = null;
  constructor(
    readonly timeoutMs: number | undefined,
    readonly callerSignal: AbortSignal | undefined,
  ) {}
}

/** A workload lane: `capacity` tasks at once, the rest wait by priority, then arrival. */
export class WorkloadLane {
  active = 0;
  /** The capacity group whose budget it shares, if any. */
  group: LaneGroup | null = null;
  /** Entries bound for this lane that have not ended (waiting in a session, waiting here, or running). */
  bound = 0;
  readonly waiting: PriorityWaitList<Entry>;
  constructor(
    readonly name: string,
    public capacity: number,
    aging?: Aging,
  ) {
    this.waiting = new PriorityWaitList<Entry>(aging);
  }
}

/** A capacity group: at most `capacity` tasks of its `members` run at once, all lanes together. */
export class LaneGroup {
  active = 0;
  readonly members: WorkloadLane[] = [];
  constructor(
    readonly name: string,
    readonly capacity: number,
  ) {}
}

/**
 * A session lane: the `holder` is the session's one task that is running or waiting for a workload
 * slot; everything else waits here and holds no workload slot.
 */
export class SessionLane {
  holder: Entry | null = null;
  readonly waiting: PriorityWaitList<Entry>;
  constructor(
    readonly key: string,
    aging?: Aging,
  ) {
    this.waiting = new PriorityWaitList<Entry>(aging);
  }
}

/**
 * The task, to run later in the async context (AsyncLocalStorage) of this call. A plain AsyncResource
 * and a closure: `AsyncResource.bind` costs a hundred times more (it defines properties on the bound
 * function). The local scheduler's entry is itself the resource (`Entry` extends AsyncResource): the
 * closure replacing `task` cost more than the resource itself.
 */
export function inContextOfCaller<T>(task: (signal: AbortSignal) => T): (signal: AbortSignal) => T {
  const resource = new AsyncResource("tiller.lane");
  return (signal) => resource.runInAsyncScope(task, null, signal);
}
