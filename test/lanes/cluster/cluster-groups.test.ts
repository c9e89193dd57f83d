import { describe, expect, it } from "vitest";
import { createPool } from "../../../src/adapters/postgres/connection.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { ConfigError, LaneTimeoutError } from "../../../src/errors.js";
import type { TillerEvent } from "../../../src/events.js";
import { ClusterDb } from "../../../src/lanes/cluster/cluster-db.js";
import type { ClusterLanes } from "../../../src/lanes/cluster/cluster-lanes.js";
import { parseLaneGroups } from "../../../src/lanes/lane-groups.js";
import type { RunOptions } from "../../../src/lanes/lane-scheduler.types.js";
import { useClusterLanes } from "../../support/cluster-lanes-suite.js";
import { type Deferred, deferred } from "../../support/deferred.js";
import { usePostgresSchema } from "../../support/postgres.js";

// Capacity groups and deadlines on the cluster lanes, against the real PostgreSQL: the group's cap is
// counted in SQL under the group's lock, so it holds across processes (several instances stand for
// several processes). Deadlines run on a simulated clock; tests wait for tasks to start, never sleep.

const db = usePostgresSchema("groups");
const lanes = useClusterLanes(db);
const GROUPS = { background: { capacity: 2, lanes: ["cron", "subagent"] } };
const CAPACITY = { main: 2, cron: 2, subagent: 2 };

interface Held {
  name: string;
  started: Deferred<void>;
  release: Deferred<string>;
  signal?: AbortSignal;
  caller: Promise<string>;
}

/** A task that records that it started and runs until the test releases it. */
function hold(scheduler: ClusterLanes, name: string, options: RunOptions, running: Set<string>): Held {
  const held: Held = { name, started: deferred(), release: deferred(), caller: Promise.resolve("") };
  held.caller = scheduler.run(options, async (signal) => {
    held.signal = signal;
    running.add(name);
    held.started.resolve();
    try {
      return await held.release.promise;
    } finally {
      running.delete(name);
    }
  });
  held.caller.catch(() => {});
  return held;
}

const activeRows = async (lanesOfGroup: string[]) =>
  (
    await db.pool.query(
      `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE state = 'active' AND lane = ANY($1)`,
      [lanesOfGroup],
    )
  ).rows[0].n as number;

describe("capacity groups on the cluster lanes", () => {
  it("hold the group's cap across processes and hand a freed slot to any process's task of the group", async () => {
    const a = await lanes(CAPACITY, { groups: GROUPS });
    const b = await lanes(CAPACITY, { groups: GROUPS });
    const running = new Set<string>();
    const cronOnA = [0, 1].map((i) => hold(a, `a-cron-${i}`, { session: `a${i}`, lane: "cron" }, running));
    await Promise.all(cronOnA.map((task) => task.started.promise));
    const subagentOnB = [0, 1].map((i) =>
      hold(b, `b-sub-${i}`, { session: `b${i}`, lane: "subagent" }, running),
    );
    // Enqueued on A after B's subagent tasks (A's cron lane has a free slot of its own, not the group).
    await expect
      .poll(
        async () =>
          (
            await db.pool.query(
              `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE lane = 'subagent'`,
            )
          ).rows[0].n,
      )
      .toBe(2);
    cronOnA.push(hold(a, "a-cron-2", { session: "a2", lane: "cron" }, running));
    // main is in no group: it runs beside the full group.
    const main = hold(b, "b-main", { session: "bm" }, running);
    await main.started.promise;
    expect(await activeRows(["cron", "subagent"])).toBe(2);
    expect(b.snapshot().groups).toBeDefined();
    // One cron task ends on A: the group's slot goes to B's subagent task, enqueued before a-cron-2.
    cronOnA[0]!.release.resolve("done");
    await subagentOnB[0]!.started.promise;
    expect([...running].filter((name) => !name.endsWith("main")).sort()).toEqual(["a-cron-1", "b-sub-0"]);
    expect(await activeRows(["cron", "subagent"])).toBe(2);
    for (const task of [...cronOnA, ...subagentOnB, main]) task.release.resolve("done");
    await Promise.all([...cronOnA, ...subagentOnB].map((task) => task.caller));
  });

  it("racing group claims never grant past the group's capacity", async () => {
    await db.pool.query(
      `INSERT INTO ${db.schema}.processes (process_id, alive_until) VALUES ('px', now() + interval '1 minute')`,
    );
    await db.pool.query(
      `INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id)
       SELECT CASE WHEN i % 2 = 0 THEN 'cron' ELSE 'subagent' END, 's' || i, 1, 'queued', 'px', i
         FROM generate_series(1, 30) AS i`,
    );
    const group = parseLaneGroups({ background: { capacity: 3, lanes: ["cron", "subagent"] } }).get("cron")!;
    const pool = createPool({ url: db.url, schema: db.schema, poolSize: 8 });
    try {
      const claimers = Array.from({ length: 8 }, () => new ClusterDb(pool, db.schema, "px", 5_000));
      for (let round = 0; round < 3; round++) {
        const grants = (await Promise.all(claimers.map((c) => c.claimGroup(group, () => 5)))).flatMap(
          (g) => g ?? [],
        );
        expect(await activeRows(["cron", "subagent"])).toBe(3);
        expect(grants).toHaveLength(3);
        await Promise.all(grants.map((g) => claimers[0]!.complete(g.id, g.fence)));
      }
    } finally {
      await pool.end();
    }
  });

  it("shows each group on the snapshot with its lanes' running and waiting tasks", async () => {
    const a = await lanes(CAPACITY, { groups: GROUPS, pollMs: 50 });
    const running = new Set<string>();
    const tasks = [0, 1, 2].map((i) => hold(a, `t${i}`, { session: `s${i}`, lane: "cron" }, running));
    await Promise.all(tasks.slice(0, 2).map((task) => task.started.promise));
    await expect
      .poll(() => a.snapshot().groups?.background, { timeout: 10_000 })
      .toEqual({ active: 2, queued: 1, capacity: 2, lanes: ["cron", "subagent"] });
    for (const task of tasks) task.release.resolve("done");
    await Promise.all(tasks.map((task) => task.caller));
  });

  it("refuses bad groups with a ConfigError naming the field, before connecting", async () => {
    await expect(lanes(CAPACITY, { groups: { g: { capacity: 0, lanes: ["cron"] } } })).rejects.toMatchObject({
      constructor: ConfigError,
      field: "groups.g.capacity",
    });
  });
});

describe("deadlines with abortGraceMs on the cluster lanes", () => {
  async function oneSlot() {
    const clock = new SimulatedClock();
    const events: TillerEvent[] = [];
    const a = await lanes({ main: 1 }, { clock, onEvent: (event) => events.push(event) });
    return { a, clock, events, running: new Set<string>() };
  }

  it("a timed-out task keeps its row until it stops; then the next task starts and the caller gets LaneTimeoutError", async () => {
    const { a, clock, events, running } = await oneSlot();
    const slow = hold(a, "slow", { session: "s1", timeoutMs: 100, abortGraceMs: 1_000 }, running);
    await slow.started.promise;
    const next = hold(a, "next", { session: "s2" }, running);
    await clock.advance(100);
    expect(slow.signal?.aborted).toBe(true);
    const slowId = events.find((e) => e.type === "lane.enqueued")!.entryId as number;
    expect(a.entryState(slowId)).toBe("stopping");
    expect(await activeRows(["main"])).toBe(1);
    expect(running.has("next")).toBe(false);
    slow.release.resolve("stopped");
    await expect(slow.caller).rejects.toBeInstanceOf(LaneTimeoutError);
    await next.started.promise;
    expect(events.filter((e) => e.type === "lane.abortGraceExceeded")).toEqual([]);
    next.release.resolve("done");
    await next.caller;
  });

  it("a long-wait report says when the group's budget, counted cluster-wide, is what is full", async () => {
    const a = await lanes(CAPACITY, { groups: GROUPS, warnAfterMs: 150 });
    const b = await lanes(CAPACITY, { groups: GROUPS });
    const reports: TillerEvent[] = [];
    a.observe?.((event) => event.type === "lane.waitExceeded" && reports.push(event));
    const running = new Set<string>();
    // The group is full with B's tasks; A's subagent lane runs nothing.
    const cron = [0, 1].map((i) => hold(b, `b-cron-${i}`, { session: `w${i}`, lane: "cron" }, running));
    await Promise.all(cron.map((task) => task.started.promise));
    const waiting = hold(a, "a-sub", { session: "ws", lane: "subagent" }, running);
    await expect.poll(() => reports.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(reports[0]).toMatchObject({
      session: "ws",
      lane: "subagent",
      waitingFor: "slot",
      activeNow: 0,
      group: { name: "background", capacity: 2, activeNow: 2 },
    });
    for (const task of cron) task.release.resolve("done");
    await waiting.started.promise;
    waiting.release.resolve("done");
    await Promise.all([...cron, waiting].map((task) => task.caller));
  });

  it("a task that ignores its signal is cut loose after the grace and reported; its row goes", async () => {
    const { a, clock, events, running } = await oneSlot();
    const hung = hold(a, "hung", { session: "s1", timeoutMs: 100, abortGraceMs: 50 }, running);
    await hung.started.promise;
    const next = hold(a, "next", { session: "s1" }, running);
    await clock.advance(100);
    expect(running.has("next")).toBe(false);
    await clock.advance(50);
    await expect(hung.caller).rejects.toBeInstanceOf(LaneTimeoutError);
    expect(events.filter((e) => e.type === "lane.abortGraceExceeded")).toMatchObject([
      { lane: "main", session: "s1", timeoutMs: 100, abortGraceMs: 50 },
    ]);
    // The same session's next task runs: one hung task never blocks its lane or its session for good.
    await next.started.promise;
    hung.release.resolve("late");
    next.release.resolve("done");
    await next.caller;
  });
});
