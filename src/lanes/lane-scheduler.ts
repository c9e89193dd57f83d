import { createActor } from "xstate";
import { SystemClock } from "../adapters/system-clock.js";
import { ConfigError, GatewayDrainingError, LaneClearedError, LaneTimeoutError } from "../errors.js";
import { type LaneEventType, type TillerEventFields, tillerEvent } from "../events.js";
import { silentLogger } from "../logger.js";
import { laneSchedulerMachine } from "../machines/lane-scheduler.machine.js";
import { priorityLevel } from "../policy/lane-priority.js";
import { Entry, EntryExtras } from "./entry.js";
import { parseLaneGroups } from "./lane-groups.js";
import { LaneQueues } from "./lane-queues.js";
import type { LaneScheduler, LaneSchedulerOptions, RunOptions } from "./lane-scheduler.types.js";
import { checkCapacity, checkRunOptions, checkWorkloadLane, defaultMainCapacity } from "./run-options.js";
import { SettlePool } from "./settle-pool.js";
import { waitFields } from "./wait-fields.js";
import { WAIT_SIGNAL, waitSignalOf } from "./wait-signal.js";
import { WaitWarnings } from "./wait-warnings.js";

export type {
  LaneScheduler,
  LaneSchedulerOptions,
  LaneSnapshot,
  RunOptions,
} from "./lane-scheduler.types.js";

// Shared by tasks started with neither a caller signal nor a timeout: nothing can abort them.
const NEVER_ABORTED = new AbortController().signal;

// The settle functions of the promise `run()` just made, set by its executor: one shared executor
// rather than a closure (and its context) per call.
let capturedResolve: ((value: unknown) => void) | undefined;
let capturedReject: ((reason: unknown) => void) | undefined;
function captureSettlers(resolve: (value: never) => void, reject: (reason: unknown) => void): void {
  capturedResolve = resolve as (value: unknown) => void;
  capturedReject = reject;
}

/**
 * Creates a lane scheduler: session lanes nested in capacity-limited workload lanes, with priorities,
 * clearing, timeouts, abort and drain (the public API in README.md). Every operation is O(1) or O(log n).
 *
 * @example
 * ```ts
 * const lanes = createLaneScheduler({ capacity: { main: 2 } });
 * const answer = await lanes.run({ session: "A", priority: "foreground" }, async () => 42);
 * ```
 */
export function createLaneScheduler(options: LaneSchedulerOptions = {}): LaneScheduler {
  const clock = options.clock ?? new SystemClock();
  const logger = options.logger ?? silentLogger;
  const onEvent = options.onEvent;
  const debug = logger.isLevelEnabled?.("debug") ?? false;
  const isObserved = options.isObserved;
  // Hot-path events are only built when someone reads them: three objects per task otherwise.
  const observed = (): boolean =>
    debug || (onEvent !== undefined && (isObserved === undefined || isObserved()));
  const warnAfterMs = options.warnAfterMs ?? 2000;
  if (!(Number.isFinite(warnAfterMs) && warnAfterMs >= 0))
    throw new ConfigError("warnAfterMs", "a number of milliseconds >= 0", warnAfterMs);

  const agingMs = options.agingMs ?? 60_000;
  if (!(Number.isFinite(agingMs) && agingMs >= 0))
    throw new ConfigError("agingMs", "a number of milliseconds >= 0 (0 turns aging off)", agingMs);

  const configured = new Map<string, number>();
  configured.set("main", defaultMainCapacity());
  for (const [name, capacity] of Object.entries(options.capacity ?? {}))
    configured.set(name, checkCapacity(`capacity.${name}`, capacity));
  // The scheduler's time: ms since it was made. Entries keep their times on it, as small integers
  // (the clock's own, Date.now() for one, would be a boxed heap number on every waiting entry).
  const epoch = clock.now();
  const now = (): number => {
    const ms = clock.now() - epoch;
    // A whole number goes out as a small integer: a difference of two Date.now() values is a boxed
    // number even when whole, and one stored in an entry's field made every entry box it (16 B each).
    return (ms | 0) === ms ? ms | 0 : ms;
  };
  const warnings = new WaitWarnings(
    clock,
    now,
    warnAfterMs,
    (id): Entry | undefined => queues.firstFrom(id),
    (fields) => {
      emit("lane.waitExceeded", fields);
      logger.warn(fields, "lane.waitExceeded");
    },
  );
  const aging = agingMs > 0 ? { ms: agingMs, now } : undefined;
  const queues = new LaneQueues(configured, warnings, start, aging, parseLaneGroups(options.groups));
  let nextId = 1;
  const settlers = new SettlePool<Entry>(settle);
  let drainWaiters: Array<() => void> = [];
  /** The entry `run()` is putting in line now: if it starts at once, it is in its caller's context. */
  let enqueuing: Entry | null = null;

  const actor = createActor(laneSchedulerMachine, options.inspect ? { inspect: options.inspect } : {});
  actor.start();
  const isOpen = () => actor.getSnapshot().value === "open";

  function emit<K extends LaneEventType>(type: K, fields: TillerEventFields<K>): void {
    if (!onEvent && !debug) return;
    const event = tillerEvent(type, clock.now(), fields);
    if (debug) logger.debug(event, type);
    onEvent?.(event);
  }

  function run<T>(runOptions: RunOptions, task: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
    if (typeof task !== "function") throw new ConfigError("task", "a function", task);
    checkRunOptions(runOptions);
    // Read once into locals: spreading the options into a defaulted copy cost a fifth of a task.
    const laneName = runOptions.lane ?? "main";
    const priority = runOptions.priority ?? "normal";
    const sessionKey = runOptions.session;
    const signal = runOptions.signal;
    if (!isOpen()) {
      emit("lane.rejected", { lane: laneName, session: sessionKey, reason: "draining" });
      return Promise.reject(new GatewayDrainingError("lane scheduler"));
    }
    if (signal?.aborted) return Promise.reject(signal.reason);

    const outer = enqueuing;
    const promise = new Promise<T>(captureSettlers);
    const resolve = capturedResolve!;
    const reject = capturedReject!;
    // The body of what was the executor: a throw (an observer's, say) still rejects this call's promise.
    try {
      const entry = new Entry(
        nextId++,
        queues.workload(laneName),
        priorityLevel(priority),
        task as (signal: AbortSignal) => unknown,
        resolve,
        reject,
        now(),
      );
      if (signal !== undefined || runOptions.timeoutMs !== undefined) {
        const extras = new EntryExtras(runOptions.timeoutMs, signal);
        extras.abortGraceMs = runOptions.abortGraceMs ?? 0;
        entry.extras = extras;
      }
      queues.add(entry);
      // The caller's abort takes back a waiting entry, and reaches a running one only through its
      // timeout's controller: with a timeout it is followed from the start; without one, only if the
      // entry has to wait (one listener and its removal less for a task that starts at once).
      if (signal && runOptions.timeoutMs !== undefined) followAbort(entry, signal);
      if (observed())
        emit("lane.enqueued", { lane: laneName, session: sessionKey, entryId: entry.id, priority });
      // Put in line only now: it may start the task, and lane.started must follow lane.enqueued.
      enqueuing = entry;
      queues.enqueue(entry, sessionKey);
      // A waiting entry is taken back by its caller's abort (the signal given, or made now by the caller
      // that asked for one only if it waits).
      if (runOptions.timeoutMs === undefined && entry.isWaiting)
        followAbort(entry, signal ?? waitSignalOf(entry, runOptions));
    } catch (error) {
      reject(error);
    }
    enqueuing = outer;
    return promise;
  }

  /** The caller's abort reaches the entry (the listener goes when the entry is released). */
  function followAbort(entry: Entry, signal: AbortSignal | undefined): void {
    if (!signal) return;
    const onAbort = () => abortEntry(entry);
    entry.extras!.onAbort = onAbort;
    signal.addEventListener("abort", onAbort, { once: true });
  }

  /** `queues` gave the entry a slot: run its task, and settle the entry once the task ends. */
  function start(entry: Entry): void {
    const lane = entry.lane;
    entry.state = "running";
    if (observed()) {
      if (warnings.warned(entry)) emit("lane.waitExceeded", waitFields(entry, true, now()));
      emit("lane.started", {
        lane: lane.name,
        session: entry.sessionLane?.key,
        entryId: entry.id,
        waitedMs: now() - entry.enqueuedAt,
      });
    }
    const extras = entry.extras;
    let signal = extras?.callerSignal ?? NEVER_ABORTED;
    if (extras !== null && extras.timeoutMs !== undefined) {
      const controller = new AbortController();
      extras.controller = controller;
      // The caller's abort reaches this controller through the entry's onAbort (see abortEntry), which
      // release() removes (LaneQueues.retire): a long-lived caller signal must not collect one listener
      // per task.
      signal = controller.signal;
      armTimeout(entry, extras, extras.timeoutMs);
    }
    let result: unknown;
    try {
      // A task that starts within its `run()` call is in its caller's async context already; one that
      // waited is started by whichever task freed its slot, and runs in the context of its own call
      // (AsyncLocalStorage: a trace, a request id), kept by its entry.
      result = entry === enqueuing ? entry.task(signal) : entry.runInAsyncScope(entry.task, null, signal);
    } catch (error) {
      // Settled in a microtask, never synchronously: a backlog of synchronous tasks would otherwise
      // recurse start → settle → release → start once per task and overflow the stack.
      settleLater(entry, "failed", error);
      return;
    }
    if (
      result instanceof Promise ||
      (result !== null && typeof (result as PromiseLike<unknown>)?.then === "function")
    ) {
      settlers.watch(entry, result as PromiseLike<unknown>);
    } else settleLater(entry, "done", result);
  }

  // The closures a task may need are made in functions of their own: a closure made in `run` or `start`
  // over their entry made every call allocate a context for it (40–56 B a task), needed or not.

  function armTimeout(entry: Entry, extras: EntryExtras, timeoutMs: number): void {
    extras.timeoutTimer = clock.setTimeout(() => timeOut(entry, extras), timeoutMs);
  }

  function settleLater(entry: Entry, outcome: "done" | "failed", value: unknown): void {
    queueMicrotask(() => settle(entry, outcome, value));
  }

  function settle(entry: Entry, outcome: "done" | "failed", value: unknown): void {
    // Timed out and stopped within its grace: now its slot is free, and the caller learns of the timeout.
    if (entry.state === "stopping") {
      if (entry.extras?.timeoutTimer) clock.clearTimeout(entry.extras.timeoutTimer);
      endTimedOut(entry);
      return;
    }
    if (entry.state !== "running") {
      // Timed out earlier: the caller already has LaneTimeoutError and the slot went to the next entry.
      logger.debug({ lane: entry.lane.name, entryId: entry.id, outcome }, "lane.lateResultDropped");
      emit("lane.lateResultDropped", {
        lane: entry.lane.name,
        session: entry.sessionLane?.key,
        entryId: entry.id,
      });
      return;
    }
    entry.state = outcome;
    if (entry.extras?.timeoutTimer) clock.clearTimeout(entry.extras.timeoutTimer);
    // Reported before release() starts the next entry: observers must never see a session's next task
    // start before its previous one ended.
    if (observed()) {
      emit("lane.ended", {
        lane: entry.lane.name,
        session: entry.sessionLane?.key,
        entryId: entry.id,
        status: outcome,
      });
    }
    release(entry);
    if (outcome === "done") entry.resolve(value);
    else entry.reject(value);
  }

  /**
   * The deadline: the task's signal aborts. Without a grace its slot is freed at once; with one, when
   * the task settles (see settle) or the grace runs out (see abortGraceExceeded), whichever comes first.
   */
  function timeOut(entry: Entry, extras: EntryExtras): void {
    if (entry.state !== "running") return;
    const grace = extras.abortGraceMs;
    entry.state = grace > 0 ? "stopping" : "timedOut";
    if (grace > 0) extras.timeoutTimer = clock.setTimeout(() => abortGraceExceeded(entry, extras), grace);
    // Reported before the abort: what the task does as it stops follows the timeout in the stream.
    emit("lane.timeout", {
      lane: entry.lane.name,
      session: entry.sessionLane?.key,
      entryId: entry.id,
      timeoutMs: entry.timeoutMs,
      ...(grace > 0 ? { abortGraceMs: grace } : {}),
    });
    extras.controller?.abort(new LaneTimeoutError(entry.lane.name, entry.timeoutMs ?? 0));
    if (grace === 0) endTimedOut(entry);
  }

  /** A timed-out task did not stop within its grace: its slot is freed anyway, and it is reported. */
  function abortGraceExceeded(entry: Entry, extras: EntryExtras): void {
    if (entry.state !== "stopping") return;
    const fields = {
      lane: entry.lane.name,
      session: entry.sessionLane?.key,
      entryId: entry.id,
      timeoutMs: extras.timeoutMs ?? 0,
      abortGraceMs: extras.abortGraceMs,
    };
    emit("lane.abortGraceExceeded", fields);
    logger.warn(fields, "lane.abortGraceExceeded");
    endTimedOut(entry);
  }

  /** Frees a timed-out task's slot; its caller rejects with LaneTimeoutError, a late result is dropped. */
  function endTimedOut(entry: Entry): void {
    entry.state = "timedOut";
    emit("lane.ended", {
      lane: entry.lane.name,
      session: entry.sessionLane?.key,
      entryId: entry.id,
      status: "timedOut",
    });
    release(entry);
    // The error the task's signal was aborted with (unless its caller aborted it first).
    const reason = entry.extras?.controller?.signal.reason;
    entry.reject(
      reason instanceof LaneTimeoutError
        ? reason
        : new LaneTimeoutError(entry.lane.name, entry.timeoutMs ?? 0),
    );
  }

  /** A running entry ended: free its slot and its session, let the next ones in. */
  function release(entry: Entry): void {
    queues.retire(entry);
    checkSettled();
  }

  function abortEntry(entry: Entry): void {
    if (entry.state === "running") {
      entry.extras?.controller?.abort(entry.callerSignal?.reason);
      return;
    }
    if (entry.state !== "waitingForSession" && entry.state !== "waitingForSlot") return;
    queues.abort(entry);
    emit("lane.aborted", { lane: entry.lane.name, session: entry.sessionLane?.key, entryId: entry.id });
    entry.reject(entry.callerSignal?.reason);
    checkSettled();
  }

  function clear(laneName: string): number {
    if (typeof laneName !== "string") throw new ConfigError("lane", "a string", laneName);
    const victims = queues.clear(laneName);
    if (!victims) return 0;
    emit("lane.cleared", { lane: laneName, count: victims.length });
    for (const entry of victims) entry.reject(new LaneClearedError(laneName));
    checkSettled();
    return victims.length;
  }

  function setCapacity(laneName: string, capacity: number): void {
    checkWorkloadLane(laneName);
    configured.set(laneName, checkCapacity(`capacity.${laneName}`, capacity));
    const lane = queues.workload(laneName);
    lane.capacity = capacity;
    emit("lane.capacityChanged", { lane: laneName, capacity });
    queues.pump(lane);
  }

  function checkSettled(): void {
    if (queues.activeCount !== 0) return;
    if (actor.getSnapshot().value === "draining") actor.send({ type: "lanes.settled" });
    // A drain() promise resolves once nothing runs, even if resume() came first or tasks started
    // after `drained` (a paused lane given capacity again): it never hangs, and never resolves early.
    if (drainWaiters.length === 0) return;
    const waiters = drainWaiters;
    drainWaiters = [];
    for (const wake of waiters) wake();
  }

  function drain(): Promise<void> {
    if (actor.getSnapshot().value === "open") {
      actor.send({ type: "lanes.drain" });
      emit("lane.draining", { active: queues.activeCount, queued: queues.queuedCount });
    }
    if (queues.activeCount === 0) {
      checkSettled();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => drainWaiters.push(resolve));
  }

  function resume(): void {
    if (actor.getSnapshot().value === "open") return;
    actor.send({ type: "lanes.resume" });
    emit("lane.resumed", {});
  }

  const scheduler: LaneScheduler & { readonly [WAIT_SIGNAL]: true } = {
    [WAIT_SIGNAL]: true,
    run,
    clear,
    setCapacity,
    drain,
    resume,
    snapshot: () => queues.snapshot(),
    get isDraining() {
      return !isOpen();
    },
    get activeCount() {
      return queues.activeCount;
    },
    get queuedCount() {
      return queues.queuedCount;
    },
    entryState: (entryId: number) => queues.entryState(entryId),
    actor,
  };
  return scheduler;
}
