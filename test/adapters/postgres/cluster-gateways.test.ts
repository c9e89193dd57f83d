import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DriverProcess } from "../../support/driver-process.js";
import { nodeEntry } from "../../support/node-entry.js";
import { usePostgresSchema } from "../../support/postgres.js";

// Three real gateway processes on one database (PostgresStore + cluster lanes, nothing else changed):
// the lane capacity is the cluster's, every message is answered once, and every user message is stored
// once, in order. (The stored assistant records are not checked: in this setup a session's last final
// is sometimes delivered but not found in the transcript; see docs/postgres.md, "Not built yet".)

const db = usePostgresSchema("gateways");
const CHILD = resolve(import.meta.dirname, "../../../bench/postgres-child.ts");
let tmp: string;
let child: string[];
const procs: DriverProcess[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-gateways-"));
  child = await nodeEntry(CHILD, join(tmp, "child.mjs"));
}, 30_000);
afterAll(async () => {
  for (const proc of procs) proc.kill();
  await rm(tmp, { recursive: true, force: true });
});

describe("gateways on one PostgreSQL", () => {
  it("share the lane capacity cluster-wide, answer every message once and store each in order", async () => {
    const names = ["ga", "gb", "gc"];
    for (const name of names) {
      const workload = { sessions: [0, 1, 2, 3].map((i) => `web:${name}-${i}`), messages: 5, modelMs: 5 };
      const args = { url: db.url, schema: db.schema, name, capacity: { main: 2 }, workload };
      procs.push(DriverProcess.start(child, ["gateway", JSON.stringify(args)]));
    }
    await Promise.all(procs.map((p) => p.waitFor((f) => f.event === "ready", 20_000)));
    for (const proc of procs) proc.send("go");
    let max = 0;
    let samples = 0;
    while (!procs.every((p) => p.facts.some((f) => f.event === "done"))) {
      const { rows } = await db.pool.query(
        `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE lane = 'main' AND state = 'active'`,
      );
      max = Math.max(max, rows[0].n);
      samples++;
      if (procs.some((p) => p.child.exitCode !== null && !p.facts.some((f) => f.event === "done")))
        throw new Error(`a gateway exited early: ${procs.map((p) => p.stderr).join("\n")}`);
    }
    expect(procs.flatMap((p) => p.facts.filter((f) => f.event === "failure"))).toEqual([]);
    expect(samples).toBeGreaterThan(10);
    expect(max).toBe(2);
    for (const proc of procs)
      expect(proc.facts.find((f) => f.event === "done")).toMatchObject({ replies: 20 });
    const { rows } = await db.pool.query<{ session_key: string; body: string }>(
      `SELECT session_key, body FROM ${db.schema}.transcript ORDER BY session_key, seq`,
    );
    const bySession = new Map<string, Array<{ role: string; text: string; messageId?: string }>>();
    for (const row of rows) {
      const list = bySession.get(row.session_key) ?? [];
      list.push(JSON.parse(row.body));
      bySession.set(row.session_key, list);
    }
    expect(bySession.size).toBe(12);
    for (const [session, records] of bySession) {
      const users = records.filter((r) => r.role === "user").map((r) => r.messageId);
      expect(users).toEqual([0, 1, 2, 3, 4].map((n) => `${session}-m${n}`));
    }
  }, 60_000);
});
