import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DriverProcess } from "../../support/driver-process.js";
import { nodeEntry } from "../../support/node-entry.js";
import { schemaName, usePostgresSchema } from "../../support/postgres.js";
import { TcpProxy } from "../../support/tcp-proxy.js";

// Real processes (the driver beside this file) against the real database: what one process cannot
// show. Every test has a schema of its own; the database is sampled directly where the claim is about
// what the cluster holds at any instant.

const db = usePostgresSchema("cluster");
const LEASE = { leaseMs: 1500, heartbeatMs: 400, pollMs: 150 };
let tmp: string;
let driver: string[];
const live: DriverProcess[] = [];
let schema = "";

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-cluster-"));
  driver = await nodeEntry(resolve(import.meta.dirname, "cluster-driver.ts"), join(tmp, "driver.mjs"));
}, 30_000);
afterAll(() => rm(tmp, { recursive: true, force: true }));
afterEach(async () => {
  for (const proc of live.splice(0)) {
    proc.kill();
    await proc.exited;
  }
  await db.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
});

function start(mode: string, args: Record<string, unknown>, url = db.url): DriverProcess {
  const proc = DriverProcess.start(driver, [
    mode,
    JSON.stringify({ url, schema, ...LEASE, capacity: { main: 3 }, ...args }),
  ]);
  live.push(proc);
  return proc;
}

async function activeNow(): Promise<{ active: number; sessions: number }> {
  const { rows } = await db.pool.query(
    `SELECT count(*)::int AS active, count(DISTINCT session_key)::int AS sessions
       FROM ${schema}.lane_runs WHERE lane = 'main' AND state = 'active'`,
  );
  return rows[0];
}

type Ran = { name: string; session: string; n: number; priority: string; start: number; end: number };
const ranOf = (procs: DriverProcess[]) =>
  procs.flatMap((p) => p.facts.filter((f) => f.event === "ran") as unknown as Ran[]);

describe("cluster lanes across real processes", () => {
  it("holds capacity exactly under load, one run per session, FIFO within a session", async () => {
    schema = schemaName(`${db.schema}_load`);
    const names = ["pa", "pb", "pc"];
    const procs = names.map((name, p) =>
      start("jobs", {
        name,
        jobs: Array.from({ length: 40 }, (_, n) => ({
          session: `s${(n + p) % 12}`,
          n,
          ms: 1 + ((n * 7 + p) % 4),
        })),
      }),
    );
    let maxActive = 0;
    let samples = 0;
    let doubled = 0;
    const sampling = (async () => {
      while (!procs.every((p) => p.facts.some((f) => f.event === "done"))) {
        const now = await activeNow().catch(() => ({ active: 0, sessions: 0 }));
        maxActive = Math.max(maxActive, now.active);
        if (now.sessions !== now.active) doubled++;
        samples++;
        if (procs.some((p) => p.child.exitCode !== null && !p.facts.some((f) => f.event === "done"))) break;
      }
    })();
    await Promise.all(procs.map((p) => p.waitFor((f) => f.event === "done", 60_000)));
    await sampling;
    const ran = ranOf(procs);
    expect(ran).toHaveLength(120);
    // From the database, sampled throughout: never above capacity, and the capacity was used.
    expect(samples).toBeGreaterThan(20);
    expect(maxActive).toBe(3);
    expect(doubled).toBe(0);
    // From the runs themselves (one clock on one machine): no two runs of a session overlap, no more
    // than three run at any instant, and each process's runs of a session start in enqueue order.
    const events = ran.flatMap((r) => [
      { t: r.start, d: 1 },
      { t: r.end, d: -1 },
    ]);
    events.sort((a, b) => a.t - b.t || a.d - b.d);
    let running = 0;
    let peak = 0;
    for (const e of events) {
      running += e.d;
      peak = Math.max(peak, running);
    }
    expect(peak).toBeLessThanOrEqual(3);
    for (const session of new Set(ran.map((r) => r.session))) {
      const runs = ran.filter((r) => r.session === session).sort((a, b) => a.start - b.start);
      for (let i = 1; i < runs.length; i++) expect(runs[i]!.start).toBeGreaterThanOrEqual(runs[i - 1]!.end);
      for (const name of names) {
        const mine = runs.filter((r) => r.name === name).map((r) => r.n);
        expect(mine).toEqual([...mine].sort((a, b) => a - b));
      }
    }
  }, 90_000);

  it("starts waiting runs by priority across sessions and processes, FIFO within a priority", async () => {
    schema = schemaName(`${db.schema}_prio`);
    const capacity = { main: 1 };
    const holder = start("hold", { name: "ph", capacity, session: "hold" });
    await holder.waitFor((f) => f.event === "started");
    const jobs = (priorities: string[], tag: string) =>
      priorities.map((priority, n) => ({ session: `${tag}${n}`, n, priority, ms: 5 }));
    const procs = [
      start("jobs", {
        name: "px",
        capacity,
        jobs: jobs(["background", "normal", "foreground", "background"], "x"),
      }),
      start("jobs", {
        name: "py",
        capacity,
        jobs: jobs(["foreground", "background", "normal", "foreground"], "y"),
      }),
    ];
    // Everything waits behind the holder (8 runs and its own second task); then it lets go, and the
    // order is the claim's own.
    await expect
      .poll(
        async () =>
          (await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.lane_runs WHERE state = 'queued'`))
            .rows[0].n,
        { timeout: 20_000 },
      )
      .toBe(9);
    holder.send("release");
    await Promise.all(procs.map((p) => p.waitFor((f) => f.event === "done", 30_000)));
    const order = ranOf(procs).sort((a, b) => a.start - b.start);
    const level = { foreground: 0, normal: 1, background: 2 } as Record<string, number>;
    expect(Number(holder.facts.find((f) => f.event === "released")!.at)).toBeLessThanOrEqual(order[0]!.start);
    expect(order.map((r) => level[r.priority])).toEqual([0, 0, 0, 1, 1, 2, 2, 2]);
    for (const name of ["px", "py"])
      for (const priority of Object.keys(level)) {
        const mine = order.filter((r) => r.name === name && r.priority === priority).map((r) => r.n);
        expect(mine).toEqual([...mine].sort((a, b) => a - b));
      }
  }, 60_000);

  it("reaps a killed process's lease and another process takes the session over", async () => {
    schema = schemaName(`${db.schema}_kill`);
    const victim = start("hold", { name: "pv", session: "k" });
    await victim.waitFor((f) => f.event === "started");
    const heir = start("jobs", { name: "pw", jobs: [{ session: "k", n: 0, ms: 5 }] });
    await heir.waitFor((f) => f.event === "ready");
    // The heir's task waits: the session is held while the victim's lease is renewed.
    await new Promise((r) => setTimeout(r, 600));
    expect(ranOf([heir])).toEqual([]);
    const killedAt = Date.now();
    victim.kill("SIGKILL");
    const ran = (await heir.waitFor((f) => f.event === "ran", 30_000)) as unknown as Ran;
    const took = ran.start - killedAt;
    // Not before the lease the victim last renewed could run out, and soon after it did (a few polls
    // on a quiet machine; the bound leaves room for a loaded one, where a poll can come seconds late).
    expect(took).toBeGreaterThanOrEqual(LEASE.leaseMs - LEASE.heartbeatMs - 50);
    expect(took).toBeLessThan(LEASE.leaseMs + 10_000);
    expect(victim.facts.some((f) => f.event === "second")).toBe(false);
    // The victim's waiting task went with it; nothing of it is left.
    await expect
      .poll(
        async () =>
          (await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.lane_runs WHERE owner = 'pv'`))
            .rows[0].n,
      )
      .toBe(0);
  }, 60_000);

  it("fences a partitioned process: once its lease is gone none of its writes land", async () => {
    schema = schemaName(`${db.schema}_part`);
    const target = new URL(db.url);
    const proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
    try {
      const viaProxy = new URL(db.url);
      viaProxy.hostname = "127.0.0.1";
      viaProxy.port = String(proxy.port);
      const cutOff = start("write", { name: "pp", session: "z" }, viaProxy.toString());
      await cutOff.waitFor((f) => f.event === "wrote" && Number(f.seq) >= 3);
      const other = start("write", { name: "pq", session: "z" });
      await other.waitFor((f) => f.event === "ready");
      // The partition: the process's connections are cut on the server and it cannot reconnect.
      proxy.partition();
      await db.pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'tiller pp%'",
      );
      const taken = await other.waitFor((f) => f.event === "wrote", 15_000);
      // The cut-off process gave its run up by itself once it could not renew the lease...
      await cutOff.waitFor((f) => f.event === "lost");
      expect(cutOff.facts.find((f) => f.event === "lost")).toMatchObject({ code: "LEASE_LOST" });
      // ...and when the network comes back, its writes (it goes on writing) are refused.
      const healedAt = Date.now();
      proxy.heal();
      await cutOff.waitFor(
        (f) => f.event === "refused" && f.code === "LEASE_LOST" && Number(f.at) > healedAt,
      );
      const { rows } = await db.pool.query<{ seq: string; body: string }>(
        `SELECT seq, body FROM ${schema}.transcript WHERE session_key = 'z' ORDER BY seq`,
      );
      const texts = rows.map((r) => JSON.parse(r.body).text as string);
      const firstOther = texts.findIndex((t) => t.startsWith("pq-"));
      expect(firstOther).toBeGreaterThan(2);
      expect(texts.slice(firstOther).filter((t) => t.startsWith("pp-"))).toEqual([]);
      expect(Number(taken.seq)).toBe(firstOther + 1);
      expect(rows.map((r) => Number(r.seq))).toEqual(rows.map((_, i) => i + 1));
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
