import { describe, expect, it } from "vitest";
import { createPool } from "../../../src/adapters/postgres/connection.js";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { SystemClock } from "../../../src/adapters/system-clock.js";
import { ClusterDb } from "../../../src/lanes/cluster/cluster-db.js";
import { defaultMainCapacity } from "../../../src/lanes/run-options.js";
import { sleep } from "../../../src/ports/clock.js";
import { useClusterLanes } from "../../support/cluster-lanes-suite.js";
import { deferred } from "../../support/deferred.js";
import { usePostgresSchema } from "../../support/postgres.js";

// Several cluster-lane instances in one process, on one schema: the protocol's behaviour, quickly.
// The multi-process properties are in cluster-processes.test.ts.

const db = usePostgresSchema("lanes");
const clock = new SystemClock();
const lanes = useClusterLanes(db);

describe("cluster lanes (one process, several instances)", () => {
  it("gives main the capacity one process gives it when none is configured, and holds it cluster-wide", async () => {
    const expected = defaultMainCapacity();
    const a = await lanes({});
    const b = await lanes({});
    const release = deferred<void>();
    const full = deferred<void>();
    let running = 0;
    let most = 0;
    const tasks = Array.from({ length: expected + 3 }, (_, i) =>
      (i % 2 ? a : b).run({ session: `web:${i}` }, async () => {
        most = Math.max(most, ++running);
        if (running === expected) full.resolve(undefined);
        await release.promise;
        running--;
      }),
    );
    // Waits for the lane to fill, however long a loaded machine takes (the test's timeout is the bound).
    await full.promise;
    // Every task is in the database by now or soon: the ones past the capacity wait there, queued.
    const counts = async () =>
      (
        await db.pool.query<{ active: number; queued: number }>(
          `SELECT count(*) FILTER (WHERE state = 'active')::int AS active,
                  count(*) FILTER (WHERE state = 'queued')::int AS queued
             FROM ${db.schema}.lane_runs WHERE lane = 'main'`,
        )
      ).rows[0]!;
    while ((await counts()).queued < 3) await sleep(clock, 20);
    expect(await counts()).toEqual({ active: expected, queued: 3 });
    expect(most).toBe(expected);
    const { rows } = await db.pool.query(
      `SELECT capacity FROM ${db.schema}.lane_capacity WHERE lane = 'main'`,
    );
    expect(rows).toEqual([{ capacity: expected }]);
    release.resolve(undefined);
    await Promise.all(tasks);
  });

  it("grants each waiting row once and never above capacity when claim passes race", async () => {
    await db.pool.query(
      `INSERT INTO ${db.schema}.processes (process_id, alive_until) VALUES ('px', now() + interval '1 minute')`,
    );
    await db.pool.query(
      `INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id)
       SELECT 'main', 's' || i, 1, 'queued', 'px', i FROM generate_series(1, 30) AS i`,
    );
    const pool = createPool({ url: db.url, schema: db.schema, poolSize: 8 });
    try {
      const claimers = Array.from({ length: 8 }, () => new ClusterDb(pool, db.schema, "px", 5_000));
      for (let round = 0; round < 3; round++) {
        const grants = (await Promise.all(claimers.map((c) => c.claim("main", 3)))).flatMap((g) => g ?? []);
        const { rows } = await db.pool.query(
          `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE state = 'active'`,
        );
        expect(rows[0].n).toBe(3);
        expect(grants).toHaveLength(3);
        expect(new Set(grants.map((g) => g.fence)).size).toBe(3);
        await Promise.all(grants.map((g) => claimers[0]!.complete(g.id, g.fence)));
      }
    } finally {
      await pool.end();
    }
  });

  it("grants another process a slot only while it renews on time, and for two heartbeats", async () => {
    // 'late' renewed 5 s ago (its heartbeat is every 3 s), 'fresh' 1 s ago: 'late' may be dead.
    await db.pool.query(
      `INSERT INTO ${db.schema}.processes (process_id, alive_until) VALUES
         ('late', now() + interval '5 seconds'), ('fresh', now() + interval '9 seconds'),
         ('me', now() + interval '10 seconds')`,
    );
    await db.pool.query(
      `INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id)
       VALUES ('main', 'g1', 1, 'queued', 'late', 1), ('main', 'g2', 1, 'queued', 'fresh', 2),
              ('main', 'g3', 1, 'queued', 'me', 3)`,
    );
    const pool = createPool({ url: db.url, schema: db.schema, poolSize: 2 });
    try {
      const me = new ClusterDb(pool, db.schema, "me", 10_000, 0, {
        heartbeatMs: 3_000,
        pollMs: 500,
      });
      const grants = (await me.claim("main", 3)) ?? [];
      expect(grants.map((g) => g.session).sort()).toEqual(["g2", "g3"]);
      const { rows } = await db.pool.query<{ session_key: string; lease_s: number }>(
        `SELECT session_key, extract(epoch FROM lease_until - now()) AS lease_s
           FROM ${db.schema}.lane_runs WHERE state = 'active' ORDER BY session_key`,
      );
      // Its own grant for a full lease; the other's until two heartbeats after its last renewal.
      expect(rows.map((r) => [r.session_key, Math.round(Number(r.lease_s))])).toEqual([
        ["g2", 5],
        ["g3", 10],
      ]);
    } finally {
      await pool.end();
      await db.pool.query(`DELETE FROM ${db.schema}.lane_runs WHERE session_key IN ('g1', 'g2', 'g3')`);
      await db.pool.query(`DELETE FROM ${db.schema}.processes WHERE process_id IN ('late', 'fresh', 'me')`);
    }
  });

  it("ends the runs a claim is given, each only with its token, and grants their slots in the same call", async () => {
    await db.pool.query(
      `INSERT INTO ${db.schema}.processes (process_id, alive_until) VALUES ('pe', now() + interval '1 minute')`,
    );
    const { rows: running } = await db.pool.query<{ id: string }>(
      `INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id, fence, lease_until)
       VALUES ('ends', 'e1', 1, 'active', 'pe', 1, 101, now() + interval '1 minute'),
              ('ends', 'e2', 1, 'active', 'pe', 2, 102, now() + interval '1 minute') RETURNING id`,
    );
    await db.pool.query(
      `INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id)
       VALUES ('ends', 'e3', 1, 'queued', 'pe', 3), ('ends', 'e4', 1, 'queued', 'pe', 4)`,
    );
    const pool = createPool({ url: db.url, schema: db.schema, poolSize: 1 });
    try {
      const me = new ClusterDb(pool, db.schema, "pe", 10_000);
      // e1 ends with its token; e2's end carries a token it no longer holds: its row stays.
      const ends = [
        { rowId: running[0]!.id, fence: 101 },
        { rowId: running[1]!.id, fence: 7 },
      ];
      const grants = (await me.claim("ends", 2, ends)) ?? [];
      expect(grants.map((g) => g.session)).toEqual(["e3"]);
      const { rows } = await db.pool.query<{ session_key: string; state: string }>(
        `SELECT session_key, state FROM ${db.schema}.lane_runs WHERE lane = 'ends' ORDER BY id`,
      );
      expect(rows).toEqual([
        { session_key: "e2", state: "active" },
        { session_key: "e3", state: "active" },
        { session_key: "e4", state: "queued" },
      ]);
    } finally {
      await pool.end();
      await db.pool.query(`DELETE FROM ${db.schema}.lane_runs WHERE lane = 'ends'`);
      await db.pool.query(`DELETE FROM ${db.schema}.processes WHERE process_id = 'pe'`);
    }
  });

  it("runs a task, returns its value, passes its error, and leaves no row behind", async () => {
    const a = await lanes();
    expect(await a.run({ session: "s1" }, async () => 42)).toBe(42);
    await expect(a.run({ session: "s1" }, async () => Promise.reject(new Error("boom")))).rejects.toThrow(
      "boom",
    );
    await expect
      .poll(
        async () => (await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schema}.lane_runs`)).rows[0].n,
      )
      .toBe(0);
  });

  it("holds the lane's capacity across instances and one task per session", async () => {
    const [a, b] = await Promise.all([lanes({ main: 2 }), lanes({ main: 2 })]);
    let active = 0;
    let max = 0;
    const bySession = new Map<string, number>();
    const overlaps: string[] = [];
    const task = (session: string) => async () => {
      active++;
      max = Math.max(max, active);
      if (bySession.get(session)) overlaps.push(session);
      bySession.set(session, 1);
      await sleep(clock, 5);
      bySession.set(session, 0);
      active--;
    };
    const runs = Array.from({ length: 40 }, (_, i) => {
      const session = `s${i % 6}`;
      return (i % 2 ? a : b).run({ session }, task(session));
    });
    await Promise.all(runs);
    expect(max).toBe(2);
    expect(overlaps).toEqual([]);
  });

  it("starts waiting tasks by priority, then in enqueue order", async () => {
    const a = await lanes({ main: 1 });
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = a.run({ session: "hold" }, () => gate);
    await expect.poll(() => a.activeCount).toBe(1);
    const plan = [
      ["b1", "background"],
      ["n1", "normal"],
      ["f1", "foreground"],
      ["b2", "background"],
      ["f2", "foreground"],
    ] as const;
    const waiting = plan.map(([name, priority]) =>
      a.run({ session: name, priority }, async () => void order.push(name)),
    );
    await expect
      .poll(
        async () =>
          (
            await db.pool.query(
              `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE state = 'queued'`,
            )
          ).rows[0].n,
      )
      .toBe(5);
    release();
    await Promise.all([first, ...waiting]);
    expect(order).toEqual(["f1", "f2", "n1", "b1", "b2"]);
  });

  it("times a task out, frees its slot at once and drops its late result", async () => {
    const a = await lanes({ main: 1 });
    const slow = a.run({ session: "x", timeoutMs: 50 }, (signal) =>
      sleep(clock, 400).then(() => signal.aborted),
    );
    await expect(slow).rejects.toMatchObject({ code: "LANE_TIMEOUT" });
    expect(await a.run({ session: "y" }, async () => "next")).toBe("next");
  });

  it("removes an aborted waiting task; clear() rejects the waiting tasks of a session", async () => {
    const a = await lanes({ main: 1 });
    let release!: () => void;
    const held = a.run(
      { session: "s" },
      () =>
        new Promise<void>((r) => {
          release = r;
        }),
    );
    await expect.poll(() => a.activeCount).toBe(1);
    const controller = new AbortController();
    const aborted = a.run({ session: "s", signal: controller.signal }, async () => "never");
    const cleared = a.run({ session: "s" }, async () => "never");
    controller.abort(new Error("gone"));
    await expect(aborted).rejects.toThrow("gone");
    expect(a.clear("session:s")).toBe(1);
    await expect(cleared).rejects.toMatchObject({ code: "LANE_CLEARED" });
    release();
    await held;
    await expect
      .poll(
        async () => (await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schema}.lane_runs`)).rows[0].n,
      )
      .toBe(0);
  });

  it("refuses the writes of a run whose lease is gone, and aborts the run", async () => {
    const a = await lanes({ main: 1 });
    const b = await lanes({ main: 1 });
    const storeA = await PostgresStore.connect({ url: db.url, schema: db.schema, fences: a, poolSize: 2 });
    const storeB = await PostgresStore.connect({ url: db.url, schema: db.schema, fences: b, poolSize: 2 });
    try {
      const head = await storeA.open("fenced");
      const user = (text: string) => ({ role: "user" as const, text, messageId: text });
      let abortReason: unknown;
      let lateWrite: unknown;
      let lateState: unknown;
      const zombie = a.run({ session: "fenced" }, async (signal) => {
        await storeA.append("fenced", [user("a1")], head);
        // The lease runs out under it (a pause, a partition): the row says so.
        await db.pool.query(`UPDATE ${db.schema}.lane_runs SET lease_until = now() - interval '1 second'`);
        // The heartbeat finds the lease gone and aborts the run...
        abortReason = await new Promise((resolve) =>
          signal.addEventListener("abort", () => resolve(signal.reason)),
        );
        // ...and a run that writes all the same is refused by the store.
        lateWrite = await storeA.append("fenced", [user("a2")], head).catch((error: unknown) => error);
        lateState = await storeA.saveState("fenced", { x: 1 }).catch((error: unknown) => error);
      });
      await expect(zombie).rejects.toMatchObject({ code: "LEASE_LOST" });
      expect(abortReason).toMatchObject({ code: "LEASE_LOST" });
      await expect.poll(() => lateState).toMatchObject({ code: "LEASE_LOST" });
      expect(lateWrite).toMatchObject({ code: "LEASE_LOST", session: "fenced" });
      const taken = await b.run({ session: "fenced" }, () => storeB.append("fenced", [user("b1")], head));
      expect(taken.map((r) => r.seq)).toEqual([2]);
      expect((await storeA.read("fenced")).map((r) => ("text" in r ? r.text : ""))).toEqual(["a1", "b1"]);
      expect(await storeA.loadState("fenced")).toBeNull();
    } finally {
      await storeA.close();
      await storeB.close();
    }
  });

  it("gives back a grant no task of the process waits for (a missed wake-up), freeing its session", async () => {
    const a = await lanes({ main: 1 });
    await db.pool.query(
      `INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id, fence, lease_until)
       VALUES ('main', 'stuck', 1, 'active', $1, 999999, nextval('${db.schema}.fence_seq'), now() + interval '1 hour')`,
      [a.processId],
    );
    // The process renews only what it holds: the stray grant goes, and the session runs again.
    expect(await a.run({ session: "stuck" }, async () => "ran")).toBe("ran");
  });

  it("drain waits for running work and refuses new work until resume", async () => {
    const a = await lanes({ main: 1 });
    let release!: () => void;
    const held = a.run(
      { session: "d" },
      () =>
        new Promise<void>((r) => {
          release = r;
        }),
    );
    await expect.poll(() => a.activeCount).toBe(1);
    let drained = false;
    const draining = a.drain().then(() => {
      drained = true;
    });
    await expect(a.run({ session: "e" }, async () => 1)).rejects.toMatchObject({ code: "GATEWAY_DRAINING" });
    expect(drained).toBe(false);
    release();
    await held;
    await draining;
    a.resume();
    expect(await a.run({ session: "e" }, async () => 1)).toBe(1);
  });
});
