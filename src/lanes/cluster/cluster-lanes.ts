import { clientConfig, createPool } from "../../adapters/postgres/connection.js";
import type { FenceSource } from "../../adapters/postgres/fences.js";
import { LaneListener } from "../../adapters/postgres/lane-listener.js";
import { migrate } from "../../adapters/postgres/migrate.js";
import { ConfigError, describe, GatewayDrainingError, LaneClearedError, TillerError } from "../../errors.js";
import type { EmitEvent, LaneWait, TillerEvent } from "../../events.js";
import type { LaneEntryState } from "../../machines/lane-entry.machine.js";
import { priorityLevel } from "../../policy/lane-priority.js";
import { sleep, type TimerHandle } from "../../ports/clock.js";
import { inContextOfCaller } from "../entry.js";
import type { LaneScheduler, LaneSnapshot, RunOptions } from "../lane-scheduler.types.js";
import { checkCapacity, checkRunOptions, SESSION_PREFIX } from "../run-options.js";
import { AdmissionGate } from "./admission-gate.js";
import { ClusterDb, type Grant, grantChannel } from "./cluster-db.js";
import { ClusterEntry } from "./cluster-entry.js";
import { type ClusterLanesOptions, parseClusterOptions } from "./cluster-options.js";
import { FenceRegistry } from "./fence-registry.js";
import { GrantedRuns } from "./granted-runs.js";

/** Cluster lanes: the lane scheduler's interface, plus what a process of a cluster needs. */
export interface ClusterLanes extends LaneScheduler, FenceSource {
  readonly processId: string;
  /** Runs the reaper now (it also runs on every poll); returns how many rows it dropped. */
  reap(): Promise<number>;
  /** Rejects waiting tasks, leaves the cluster (its rows go) and closes the connections. */
  close(): Promise<void>;
}

/**
 * Creates lanes shared by every process on one PostgreSQL schema: exact workload-lane capacity across
 * processes, one active run per session cluster-wide, priorities then FIFO, leases renewed by a
 * heartbeat, a fencing token per grant, a reaper any process runs. A drop-in for the in-process lane
 * scheduler (the gateway asks for slots the same way); docs/postgres.md describes the protocol.
 *
 * @example
 * ```ts
 * const lanes = await createClusterLanes({ url, capacity: { main: 4 } });
 * await lanes.run({ session: "telegram:42", priority: "foreground" }, async (signal) => work(signal));
 * ```
 */
export async function createClusterLanes(options: ClusterLanesOptions): Promise<ClusterLanes> {
  const { schema, clock, logger, leaseMs, heartbeatMs, pollMs, agingMs, warnAfterMs, processId, capacities } =
    parseClusterOptions(options);
  // Lane rows are scheduling state, not acknowledged data: their commits need not wait for the disk
  // (a claim, a renewal or an end costs no fsync). The store's writes stay synchronous.
  const pool = createPool(
    { ...options, schema, applicationName: options.applicationName ?? `tiller ${processId}` },
    { synchronous_commit: "off" },
  );
  const db = new ClusterDb(pool, schema, processId, leaseMs, agingMs);
  const fences = new FenceRegistry<ClusterEntry>();
  const entries = new Map<number, ClusterEntry>();
  /** Rows of runs that ended by themselves, given back once their writes landed. */
  const returning = new Set<string>();
  const toEnqueue: ClusterEntry[] = [];
  let enqueueChain: Promise<void> = Promise.resolve();
  const passes = new Map<string, Promise<void>>();
  const passAgain = new Set<string>();
  const pending = new Set<Promise<unknown>>();
  let counts: LaneSnapshot["lanes"] = {};
  let nextId = 1;
  let activeCount = 0;
  let generation = 0;
  let closed = false;
  let pollTimer: TimerHandle | undefined;
  let heartbeatTimer: TimerHandle | undefined;

  const gate = new AdmissionGate(options.inspect);

  const listeners = new Set<(event: TillerEvent) => void>();
  if (options.onEvent) listeners.add(options.onEvent as (event: TillerEvent) => void);
  const emit: EmitEvent = (type, fields) => {
    if (listeners.size === 0) return;
    const event = { at: clock.now(), type, processId, ...fields } as unknown as TillerEvent;
    for (const listener of listeners) listener(event);
  };

  /** Runs a database step in the background; a failure is logged, the poll retries it. */
  function track<T>(what: string, work: Promise<T>): void {
    const settled = work.then(
      () => {},
      (error: unknown) => {
        if (!closed) logger.warn({ err: error, processId }, `cluster lanes: ${what} failed`);
      },
    );
    pending.add(settled);
    void settled.then(() => pending.delete(settled));
  }

  function run<T>(runOptions: RunOptions, task: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
    if (typeof task !== "function")
      throw new TypeError(`task: expected a function, received ${describe(task)}`);
    checkRunOptions(runOptions);
    const lane = runOptions.lane ?? "main";
    const priority = runOptions.priority ?? "normal";
    const session = runOptions.session;
    if (!gate.isOpen || closed) {
      emit("lane.rejected", { lane, session, reason: "draining" });
      return Promise.reject(new GatewayDrainingError("lane scheduler"));
    }
    if (runOptions.signal?.aborted) return Promise.reject(runOptions.signal.reason);
    return new Promise<T>((resolve, reject) => {
      const id = nextId++;
      // A task without a session gets a key no session can have (keys carry no control characters).
      const sessionKey = session ?? `\u0001task:${processId}:${id}`;
      const entry = new ClusterEntry(
        id,
        lane,
        sessionKey,
        session,
        priorityLevel(priority),
        // Started later, from a grant's poll: it keeps the async context (AsyncLocalStorage) of this call.
        inContextOfCaller(task as (signal: AbortSignal) => unknown),
        resolve as (value: unknown) => void,
        reject,
        clock.now(),
        runOptions.timeoutMs,
        runOptions.signal,
      );
      entries.set(id, entry);
      if (entry.callerSignal) {
        entry.onAbort = () => abortEntry(entry);
        entry.callerSignal.addEventListener("abort", entry.onAbort, { once: true });
      }
      emit("lane.enqueued", { lane, session, entryId: id, priority });
      toEnqueue.push(entry);
      if (toEnqueue.length === 1) queueMicrotask(flushEnqueue);
    });
  }

  /** One INSERT for every task enqueued in this tick, in call order; batches follow one another. */
  function flushEnqueue(): void {
    const batch = toEnqueue.splice(0);
    enqueueChain = enqueueChain.then(async () => {
      const live = batch.filter((entry) => entry.isWaiting);
      if (live.length === 0) return;
      try {
        for (const { rowId, localId } of await db.enqueue(live)) {
          const entry = entries.get(localId);
          if (!entry) continue;
          entry.rowId = rowId;
          // Aborted or cleared while its row was being written: take the row back.
          if (!entry.isWaiting) track("dequeue", db.dequeue([rowId]));
        }
      } catch (cause) {
        const error = new TillerError("STORE_FAILED", "could not enqueue in the cluster lanes", {
          retryable: true,
          cause,
        });
        for (const entry of live) if (entry.isWaiting) forget(entry, "failed", error);
        return;
      }
      for (const lane of new Set(live.map((e) => e.lane))) claim(lane);
    });
  }

  /** Runs a claim pass for the lane (one at a time per lane here; a request meanwhile runs once more). */
  function claim(lane: string): void {
    if (closed) return;
    if (passes.has(lane)) {
      passAgain.add(lane);
      return;
    }
    const pass = claimPass(lane).finally(() => {
      passes.delete(lane);
      if (passAgain.delete(lane)) claim(lane);
    });
    passes.set(lane, pass);
    track("claim", pass);
  }

  async function claimPass(lane: string): Promise<void> {
    const sentAt = clock.now();
    const grants = await db.claim(lane, capacities.get(lane) ?? 1);
    // Another lane's pass granted the same session first: the next pass sees it active.
    if (!grants) passAgain.add(lane);
    for (const grant of grants ?? []) if (grant.owner === processId) granted(grant, sentAt);
  }

  /** Asks which of this process's rows were granted (after a wake-up, or on the poll). */
  async function fetchGrants(): Promise<void> {
    const sentAt = clock.now();
    for (const grant of await db.myGrants()) {
      if (entries.get(grant.localId)?.state !== "running") granted(grant, sentAt);
    }
  }

  /** A grant for this process; `sentAt`: when the query that found it was sent (the lease is older). */
  function granted(grant: Grant, sentAt: number): void {
    const entry = entries.get(grant.localId);
    if (!entry?.isWaiting || closed) {
      // Nobody waits for it any more (aborted, cleared, closed): give the slot back.
      if (entry?.state !== "running" && !returning.has(grant.id)) release(grant.id, grant.fence, undefined);
      return;
    }
    entry.rowId = grant.id;
    entry.fence = grant.fence;
    entry.leaseDeadline = sentAt + grant.remainingMs;
    start(entry);
  }

  const runs = new GrantedRuns({
    clock,
    fences,
    emit,
    logger,
    processId,
    ended(entry, clean) {
      activeCount--;
      const rowId = entry.rowId!;
      const fence = entry.fence!;
      // Writes the run issued while it held the grant land first, then the grant goes (meanwhile a
      // poll that sees the row must not give it back early).
      if (clean) {
        returning.add(rowId);
        const landed = fences.settled(entry.sessionKey);
        track(
          "complete",
          landed.then(() => release(rowId, fence, entry.lane)),
        );
      } else release(rowId, fence, entry.lane);
      forgetLater(entry);
      checkSettled();
    },
  });

  function start(entry: ClusterEntry): void {
    activeCount++;
    // As in one process: a task reported as waiting too long is reported again as it starts.
    if (entry.warned) {
      const activeNow = counts[entry.lane]?.active ?? 0;
      reportWait({
        ...waitOf(entry),
        waitingFor: "slot",
        starting: true,
        queueAhead: 0,
        activeAhead: activeNow,
        activeNow,
        queueBehind: 0,
      });
    }
    runs.start(entry, generation);
  }

  function waitOf(entry: ClusterEntry) {
    return {
      lane: entry.lane,
      session: entry.session,
      entryId: entry.id,
      waitedMs: clock.now() - entry.enqueuedAt,
    };
  }

  function reportWait(fields: LaneWait): void {
    emit("lane.waitExceeded", fields);
    logger.warn(fields, "lane.waitExceeded");
  }

  /**
   * `lane.waitExceeded` for this process's tasks that waited `warnAfterMs` (checked at each poll, so
   * up to `pollMs` late), with where each stands in the database: its queue in the cluster is the
   * lane's rows, whichever process enqueued them.
   */
  async function warnLongWaits(): Promise<void> {
    const now = clock.now();
    const due = [...entries.values()].filter(
      (e) => e.isWaiting && !e.warned && e.rowId !== undefined && now - e.enqueuedAt >= warnAfterMs,
    );
    if (due.length === 0) return;
    const positions = await db.waitPositions(due.map((e) => e.rowId!));
    for (const entry of due) {
      const at = positions.get(entry.rowId!);
      // Granted (or gone) meanwhile: it no longer waits.
      if (!at || !entry.isWaiting) continue;
      entry.warned = true;
      reportWait({
        ...waitOf(entry),
        waitingFor: at.sessionBusy ? "session" : "slot",
        starting: false,
        queueAhead: at.queueAhead,
        activeAhead: at.sessionBusy ? 1 : at.activeNow,
        activeNow: at.activeNow,
        queueBehind: at.queueBehind,
      });
    }
  }

  /**
   * Gives a run's row back, trying again with backoff while the database cannot answer (the row is no
   * longer renewed meanwhile, so at worst the reaper of any process drops it once its lease ran out).
   */
  async function completeUntilDone(rowId: string, fence: number): Promise<string | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await db.complete(rowId, fence);
      } catch (error) {
        if (closed) throw error;
        if (attempt === 0)
          logger.warn(
            { err: error, processId, rowId },
            "cluster lanes: returning a run failed, trying again",
          );
        await sleep(clock, Math.min(100 * 2 ** attempt, 2000));
      }
    }
  }

  function release(rowId: string, fence: number, lane: string | undefined): void {
    track(
      "complete",
      completeUntilDone(rowId, fence).then((ended) => {
        returning.delete(rowId);
        const freed = lane ?? ended;
        if (freed !== undefined) claim(freed);
        for (const waiting of waitingLanes()) if (waiting !== freed) claim(waiting);
      }),
    );
  }

  function abortEntry(entry: ClusterEntry): void {
    if (entry.state === "running") {
      entry.controller?.abort(entry.callerSignal?.reason);
      return;
    }
    if (!entry.isWaiting) return;
    emit("lane.aborted", { lane: entry.lane, session: entry.session, entryId: entry.id });
    forget(entry, "aborted", entry.callerSignal?.reason);
  }

  /** A waiting entry leaves without running: its row goes (a grant that races this is given back). */
  function forget(entry: ClusterEntry, state: LaneEntryState, reason: unknown): void {
    entry.state = state;
    if (entry.rowId) track("dequeue", db.dequeue([entry.rowId]));
    forgetLater(entry);
    entry.reject(reason);
    checkSettled();
  }

  function forgetLater(entry: ClusterEntry): void {
    if (entry.onAbort) entry.callerSignal?.removeEventListener("abort", entry.onAbort);
    // A late grant for it finds no entry and is given back (see granted).
    entries.delete(entry.id);
  }

  function waitingLanes(): Set<string> {
    const lanes = new Set<string>();
    for (const entry of entries.values()) if (entry.isWaiting && entry.rowId) lanes.add(entry.lane);
    return lanes;
  }

  function clear(laneName: string): number {
    if (typeof laneName !== "string")
      throw new TypeError(`lane: expected a string, received ${describe(laneName)}`);
    const session = laneName.startsWith(SESSION_PREFIX) ? laneName.slice(SESSION_PREFIX.length) : undefined;
    const victims = [...entries.values()].filter(
      (e) => e.isWaiting && (session === undefined ? e.lane === laneName : e.session === session),
    );
    if (victims.length === 0) return 0;
    emit("lane.cleared", { lane: laneName, count: victims.length });
    for (const entry of victims) forget(entry, "cleared", new LaneClearedError(laneName));
    return victims.length;
  }

  function setCapacity(laneName: string, capacity: number): void {
    if (typeof laneName !== "string" || laneName.length === 0)
      throw new ConfigError("lane", "a non-empty lane name", laneName);
    if (laneName.startsWith(SESSION_PREFIX))
      throw new ConfigError("lane", "a workload lane (session lanes always run one task)", laneName);
    capacities.set(laneName, checkCapacity(`capacity.${laneName}`, capacity));
    emit("lane.capacityChanged", { lane: laneName, capacity });
    track(
      "setCapacity",
      db.setCapacity(laneName, capacity).then(() => claim(laneName)),
    );
  }

  async function heartbeat(): Promise<void> {
    const sentAt = clock.now();
    const judged = ++generation;
    try {
      // Only rows whose task still runs or waits here: an ended run's row is never renewed.
      const live = [...entries.values()]
        .filter(
          (e) => (e.state === "running" || e.isWaiting) && e.rowId !== undefined && !returning.has(e.rowId),
        )
        .map((e) => e.rowId!);
      const renewed = await db.heartbeat(live);
      const held = new Set(renewed.map((grant) => grant.id));
      // A grant whose wake-up was missed starts now; one nobody waits for is given back (a renewed
      // row that no task of this process holds would keep its session blocked).
      for (const grant of renewed) {
        if (entries.get(grant.localId)?.state !== "running") granted(grant, sentAt);
      }
      for (const entry of entries.values()) {
        if (entry.state !== "running") continue;
        if (held.has(entry.rowId!)) entry.leaseDeadline = sentAt + leaseMs;
        else if (entry.startedInGeneration < judged) runs.loseLease(entry);
      }
    } catch (error) {
      logger.warn({ err: error, processId }, "cluster lanes: heartbeat failed");
    }
    // Whatever the database said: a lease not renewed in time is given up here too.
    const now = clock.now();
    for (const entry of entries.values())
      if (entry.state === "running" && entry.leaseDeadline <= now) runs.loseLease(entry);
  }

  async function reap(): Promise<number> {
    const rows = await db.reap();
    for (const row of rows)
      if (row.kind === "expired")
        emit("lane.reaped", { lane: row.lane, session: row.session ?? undefined, owner: row.owner ?? "" });
    for (const lane of new Set(rows.map((r) => r.lane))) claim(lane);
    return rows.length;
  }

  /**
   * Waiting tasks whose rows are gone are enqueued again. While the database was away this process
   * could not renew its membership, and once it is back another process's reaper (or its own, before
   * its first renewal) drops its waiting rows as those of a dead process: without this the tasks
   * would wait here for good, their sessions blocked. They go to the back of the queue.
   */
  async function requeueLost(): Promise<void> {
    const waiting = [...entries.values()].filter((e) => e.isWaiting && e.rowId !== undefined);
    if (waiting.length === 0) return;
    const present = await db.existing(waiting.map((e) => e.rowId!));
    const lost = waiting.filter((e) => e.isWaiting && e.rowId !== undefined && !present.has(e.rowId));
    if (lost.length === 0) return;
    logger.warn(
      { processId, count: lost.length },
      "cluster lanes: waiting rows were dropped, enqueued again",
    );
    for (const entry of lost) {
      entry.rowId = undefined;
      toEnqueue.push(entry);
    }
    flushEnqueue();
  }

  async function poll(): Promise<void> {
    await reap();
    await requeueLost();
    if ([...entries.values()].some((e) => e.isWaiting && e.rowId)) await fetchGrants();
    for (const lane of waitingLanes()) claim(lane);
    counts = {};
    for (const row of await db.laneCounts()) {
      const capacity = row.capacity >= 0 ? row.capacity : (capacities.get(row.lane) ?? 1);
      counts[row.lane] = { active: row.active, queued: row.queued, capacity };
    }
    await warnLongWaits();
  }

  function loop(
    every: number,
    step: () => Promise<unknown>,
    what: string,
    set: (t: TimerHandle) => void,
  ): void {
    const tick = () => {
      if (closed) return;
      track(
        what,
        step().finally(() => closed || set(clock.setTimeout(tick, every))),
      );
    };
    set(clock.setTimeout(tick, every));
  }

  function snapshot(): LaneSnapshot {
    const lanes: LaneSnapshot["lanes"] = structuredClone(counts);
    for (const entry of entries.values()) {
      if (entry.session === undefined || !(entry.isWaiting || entry.state === "running")) continue;
      const key = `${SESSION_PREFIX}${entry.session}`;
      const lane = lanes[key] ?? { active: 0, queued: 0, capacity: 1 };
      lanes[key] = lane;
      if (entry.state === "running") lane.active++;
      else lane.queued++;
    }
    return { lanes };
  }

  function checkSettled(): void {
    gate.settled(activeCount);
  }

  // Start: schema, capacities, membership, wake-ups, then the loops.
  await migrate(pool, schema);
  for (const [lane, capacity] of capacities) await db.setCapacity(lane, capacity);
  await db.heartbeat([]);
  const listener = new LaneListener({
    config: clientConfig({ ...options, schema, applicationName: `tiller ${processId} listen` }),
    channels: [grantChannel(schema, processId)],
    clock,
    onNotify: () => track("grants", fetchGrants()),
    onReconnect: () => track("grants", fetchGrants()),
  });
  await listener.start();
  loop(heartbeatMs, heartbeat, "heartbeat", (t) => {
    heartbeatTimer = t;
  });
  loop(pollMs, poll, "poll", (t) => {
    pollTimer = t;
  });

  return {
    processId,
    run,
    clear,
    setCapacity,
    drain(): Promise<void> {
      const { closed: justClosed, done } = gate.drain(activeCount);
      if (justClosed) emit("lane.draining", { active: activeCount });
      return done;
    },
    resume(): void {
      if (gate.resume()) emit("lane.resumed", {});
    },
    snapshot,
    get isDraining() {
      return !gate.isOpen;
    },
    get activeCount() {
      return activeCount;
    },
    get queuedCount() {
      let queued = 0;
      for (const entry of entries.values()) if (entry.isWaiting) queued++;
      return queued;
    },
    entryState: (entryId: number) => entries.get(entryId)?.state,
    actor: gate.actor,
    fenceFor: (session: string) => fences.fenceFor(session),
    using: (session: string, write: Promise<unknown>) => fences.using(session, write),
    reap,
    observe(listener: (event: TillerEvent) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close(): Promise<void> {
      if (closed) return;
      for (const entry of entries.values()) {
        if (entry.isWaiting) forget(entry, "cleared", new GatewayDrainingError("lane scheduler"));
      }
      closed = true;
      if (pollTimer) clock.clearTimeout(pollTimer);
      if (heartbeatTimer) clock.clearTimeout(heartbeatTimer);
      await enqueueChain;
      await Promise.allSettled([...passes.values(), ...pending]);
      await listener.close();
      await db.leave().catch(() => {});
      await pool.end();
    },
  };
}
export type { ClusterLanesOptions } from "./cluster-options.js";
