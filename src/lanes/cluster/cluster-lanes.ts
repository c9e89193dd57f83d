import { clientConfig, createPool } from "../../adapters/postgres/connection.js";
import { LaneListener } from "../../adapters/postgres/lane-listener.js";
import { migrate } from "../../adapters/postgres/migrate.js";
import { describe, GatewayDrainingError, LaneClearedError } from "../../errors.js";
import type { LaneWait, TillerEvent } from "../../events.js";
import type { LaneEntryState } from "../../machines/lane-entry.machine.js";
import { parseLaneGroups, withGroups } from "../lane-groups.js";
import type { LaneSnapshot, RunOptions } from "../lane-scheduler.types.js";
import { checkCapacity, checkRunOptions, checkWorkloadLane } from "../run-options.js";
import { AdmissionGate } from "./admission-gate.js";
import { ClaimPasses } from "./claim-passes.js";
import { ClusterDb, type Grant } from "./cluster-db.js";
import { ClusterEntry } from "./cluster-entry.js";
import type { ClusterLanes } from "./cluster-lanes.types.js";
import { type ClusterLanesOptions, parseClusterOptions } from "./cluster-options.js";
import {
  clusterSnapshot,
  laneCounts,
  lanesWaiting,
  lostWaiting,
  toClear,
  waitingCount,
} from "./cluster-snapshot.js";
import { completeUntilDone } from "./complete-until-done.js";
import { every } from "./every.js";
import { FenceRegistry } from "./fence-registry.js";
import { grantChannel } from "./grant-channel.js";
import { GrantedRuns } from "./granted-runs.js";
import { LaneEventFan } from "./lane-event-fan.js";
import { longWaits, startingWait } from "./long-waits.js";
import { NewRuns } from "./new-runs.js";
import { renewLeases } from "./renew-leases.js";
import { RunEnds } from "./run-ends.js";

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
  // Checked before connecting, as the other options are.
  const groupOf = parseLaneGroups(options.groups);
  // Lane rows are scheduling state, not acknowledged data: their commits need not wait for the disk
  // (a claim, a renewal or an end costs no fsync). The store's writes stay synchronous. Lane statements
  // are prepared: connections are kept, so their plans too. No forced generic plans: a lane's share of
  // the rows varies, and a generic plan that misjudges it was 13 times slower (docs/postgres.md).
  const pool = createPool(
    { ...options, schema, applicationName: options.applicationName ?? `tiller ${processId}` },
    { synchronous_commit: "off" },
    0,
  );
  const db = new ClusterDb(pool, schema, processId, leaseMs, agingMs, { heartbeatMs, pollMs });
  const fences = new FenceRegistry<ClusterEntry>();
  const entries = new Map<number, ClusterEntry>();
  /** Rows of runs that ended by themselves, given back once their writes landed. */
  const returning = new Set<string>();
  // Rows of runs that ended go in their lane's next claim pass (a grouped lane's on their own).
  const runEnds = new RunEnds({ folds: (lane) => !groupOf.has(lane) && !closed, claim, release });
  const newRuns = new NewRuns({
    db,
    entries,
    folds: (lane) => !groupOf.has(lane),
    claim,
    fail: (entry, error) => forget(entry, "failed", error),
    track,
  });
  const pending = new Set<Promise<unknown>>();
  let counts: LaneSnapshot["lanes"] = {};
  let nextId = 1;
  let activeCount = 0;
  let generation = 0;
  let closed = false;

  const gate = new AdmissionGate(options.inspect);
  const events = new LaneEventFan(clock, processId, options.onEvent);
  const emit = events.emit;

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

  const passes = new ClaimPasses(
    (lane) => claimPass(lane),
    track,
    () => closed,
  );

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
      const settle = { resolve: resolve as (value: unknown) => void, reject };
      const entry = ClusterEntry.forRun(id, processId, runOptions, task, settle, clock.now());
      entries.set(id, entry);
      if (entry.callerSignal) {
        entry.onAbort = () => abortEntry(entry);
        entry.callerSignal.addEventListener("abort", entry.onAbort, { once: true });
      }
      emit("lane.enqueued", { lane, session, entryId: id, priority });
      newRuns.push(entry);
    });
  }

  /** Runs a claim pass for the lane (one at a time per lane here; a request meanwhile runs once more). */
  function claim(lane: string): void {
    // A grouped lane's pass is its group's (keyed by its first lane): it grants across the group's lanes.
    passes.claim(groupOf.get(lane)?.lanes[0] ?? lane);
  }

  async function claimPass(lane: string): Promise<void> {
    const sentAt = clock.now();
    const capacityOf = (l: string) => capacities.get(l) ?? 1;
    const { result: grants, ended } = await runEnds.pass(lane, (ends) =>
      newRuns.pass(lane, (news) => db.claimLaneOrGroup(lane, groupOf.get(lane), capacityOf, ends, news)),
    );
    // Another lane's pass granted the same session first: the next pass sees it active.
    if (!grants) return passes.passAgain(lane);
    for (const end of ended) returning.delete(end.rowId);
    if (ended.length > 0) for (const waiting of waitingLanes()) if (waiting !== lane) claim(waiting);
    for (const grant of grants) if (grant.owner === processId) granted(grant, sentAt);
  }

  /** Starts the grants a wake-up named (`told`), else asks which of this process's rows were granted. */
  async function fetchGrants(told?: Grant[]): Promise<void> {
    const sentAt = clock.now();
    for (const grant of told ?? (await db.myGrants())) {
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
          landed.then(() => runEnds.end(entry.lane, rowId, fence)),
        );
      } else release(rowId, fence, entry.lane);
      forgetLater(entry);
      checkSettled();
    },
  });

  function start(entry: ClusterEntry): void {
    activeCount++;
    // As in one process: a task reported as waiting too long is reported again as it starts.
    if (entry.warned) reportWait(startingWait(entry, clock.now(), counts[entry.lane]?.active ?? 0));
    runs.start(entry, generation);
  }

  function reportWait(fields: LaneWait): void {
    emit("lane.waitExceeded", fields);
    logger.warn(fields, "lane.waitExceeded");
  }

  async function warnLongWaits(): Promise<void> {
    for (const report of await longWaits(entries.values(), db, clock.now(), warnAfterMs, groupOf))
      reportWait(report);
  }

  function release(rowId: string, fence: number, lane: string | undefined): void {
    track(
      "complete",
      completeUntilDone({ db, clock, logger, processId, isClosed: () => closed }, rowId, fence).then(
        (ended) => {
          returning.delete(rowId);
          const freed = lane ?? ended;
          if (freed !== undefined) claim(freed);
          for (const waiting of waitingLanes()) if (waiting !== freed) claim(waiting);
        },
      ),
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

  const waitingLanes = () => lanesWaiting(entries.values());

  function clear(laneName: string): number {
    const victims = toClear(entries.values(), laneName);
    if (victims.length === 0) return 0;
    emit("lane.cleared", { lane: laneName, count: victims.length });
    for (const entry of victims) forget(entry, "cleared", new LaneClearedError(laneName));
    return victims.length;
  }

  function setCapacity(laneName: string, capacity: number): void {
    checkWorkloadLane(laneName);
    capacities.set(laneName, checkCapacity(`capacity.${laneName}`, capacity));
    emit("lane.capacityChanged", { lane: laneName, capacity });
    track(
      "setCapacity",
      db.setCapacity(laneName, capacity).then(() => claim(laneName)),
    );
  }

  function heartbeat(): Promise<void> {
    return renewLeases(
      { db, clock, logger, processId, leaseMs, entries, returning, runs, granted },
      ++generation,
    );
  }

  async function reap(): Promise<number> {
    const rows = await db.reap();
    for (const row of rows)
      if (row.kind === "expired")
        emit("lane.reaped", { lane: row.lane, session: row.session ?? undefined, owner: row.owner ?? "" });
    for (const lane of new Set(rows.map((r) => r.lane))) claim(lane);
    return rows.length;
  }

  /** Waiting tasks whose rows are gone (see lostWaiting) go to the back of the queue again. */
  async function requeueLost(): Promise<void> {
    const lost = await lostWaiting(entries.values(), db);
    if (lost.length === 0) return;
    logger.warn(
      { processId, count: lost.length },
      "cluster lanes: waiting rows were dropped, enqueued again",
    );
    for (const entry of lost) entry.rowId = undefined;
    newRuns.again(lost);
  }

  async function poll(): Promise<void> {
    await reap();
    await requeueLost();
    if ([...entries.values()].some((e) => e.isWaiting && e.rowId)) await fetchGrants();
    for (const lane of waitingLanes()) claim(lane);
    counts = await laneCounts(db, capacities);
    await warnLongWaits();
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
    // A claim elsewhere granted this process's rows: the wake-up names them, or it asks.
    onNotify: (_channel, payload) => track("grants", fetchGrants(db.told(payload))),
    onReconnect: () => track("grants", fetchGrants()),
  });
  await listener.start();
  const isClosed = () => closed;
  const heartbeats = every(clock, heartbeatMs, heartbeat, (work) => track("heartbeat", work), isClosed);
  const polls = every(clock, pollMs, poll, (work) => track("poll", work), isClosed);

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
    snapshot: () => withGroups(clusterSnapshot(counts, entries.values()), groupOf),
    get isDraining() {
      return !gate.isOpen;
    },
    get activeCount() {
      return activeCount;
    },
    get queuedCount() {
      return waitingCount(entries.values());
    },
    entryState: (entryId: number) => entries.get(entryId)?.reportedState,
    actor: gate.actor,
    fenceFor: (session: string) => fences.fenceFor(session),
    using: (session: string, write: Promise<unknown>) => fences.using(session, write),
    reap,
    observe: (listener: (event: TillerEvent) => void) => events.observe(listener),
    async close(): Promise<void> {
      if (closed) return;
      for (const entry of entries.values()) {
        if (entry.isWaiting) forget(entry, "cleared", new GatewayDrainingError("lane scheduler"));
      }
      closed = true;
      polls.stop();
      heartbeats.stop();
      await newRuns.settled;
      await Promise.allSettled([...passes.inFlight, ...pending]);
      await listener.close();
      await db.leave().catch(() => {});
      await pool.end();
    },
  };
}
export type { ClusterLanes } from "./cluster-lanes.types.js";
export type { ClusterLanesOptions } from "./cluster-options.js";
