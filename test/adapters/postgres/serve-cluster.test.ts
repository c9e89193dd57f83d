import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { usePostgresSchema } from "../../support/postgres.js";
import { startServe, useServeProcesses } from "../../support/serve-process.js";
import { SseRecorder } from "../../support/sse-recorder.js";

// Two real `tiller serve --postgres` processes on one database schema are one gateway: each answers
// over HTTP, a session carried on by the other process continues the same stored conversation, and
// the lanes (capacity, members) are the cluster's.

const db = usePostgresSchema("serve");
const procs = useServeProcesses("tiller-serve-pg");
const live = procs.live;

async function post(url: string, session: string, text: string, id: string) {
  const response = await fetch(`${url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text, id }),
  });
  return { status: response.status, body: (await response.json()) as { ack: { disposition: string } } };
}

function follow(url: string, session: string) {
  const recorder = new SseRecorder(`${url}/v1/sessions/${encodeURIComponent(session)}/deliveries`);
  procs.record(recorder);
  return recorder;
}

describe("tiller serve --postgres", () => {
  it("two processes on one schema answer over HTTP and carry on each other's sessions", async () => {
    const config = join(procs.dir, "config.json");
    await writeFile(config, JSON.stringify({ lanes: { main: 1 } }));
    const start = async (name: string, extra: string[], env: NodeJS.ProcessEnv) => {
      const args = ["--store", join(procs.dir, name), "--config", config, "--schema", db.schema, ...extra];
      const running = await startServe(procs.command, args, env);
      live.add(running);
      return running;
    };
    // One is given the database by the environment variable, one by its flag.
    const a = await start("a", [], { TILLER_DATABASE_URL: db.url });
    const b2 = await start("b", ["--postgres", db.url], { TILLER_DATABASE_URL: "" });
    for (const running of [a, b2]) expect(running.stdout()).toContain(`schema ${db.schema}`);

    const { rows: members } = await db.pool.query(`SELECT process_id FROM ${db.schema}.processes`);
    expect(members).toHaveLength(2);
    const { rows: caps } = await db.pool.query(
      `SELECT lane, capacity FROM ${db.schema}.lane_capacity WHERE lane = 'main'`,
    );
    expect(caps).toEqual([{ lane: "main", capacity: 1 }]);

    // Each process answers its own caller.
    const onA = follow(a.url, "web:x");
    const onB = follow(b2.url, "web:y");
    expect((await post(a.url, "web:x", "hello from x", "x1")).body.ack.disposition).toBe("started");
    expect((await post(b2.url, "web:y", "hello from y", "y1")).body.ack.disposition).toBe("started");
    const ax = await onA.waitFor((event) => event.event === "delivery", 20_000);
    const by = await onB.waitFor((event) => event.event === "delivery", 20_000);
    expect(String(ax.data.text)).toContain("hello from x");
    expect(String(by.data.text)).toContain("hello from y");

    // The session x goes on through B: the same stored conversation, one transcript in the database.
    const xOnB = follow(b2.url, "web:x");
    await post(b2.url, "web:x", "still me", "x2");
    const bx = await xOnB.waitFor(
      (e) => e.event === "delivery" && String(e.data.text).includes("still me"),
      20_000,
    );
    // B's stream of x replays A's earlier reply first: the deliveries are the cluster's, not a process's.
    expect(xOnB.of("delivery")[0]!.id).toBe(ax.id);
    expect(xOnB.of("delivery").indexOf(bx)).toBe(1);
    for (const running of [a, b2]) {
      running.proc.kill("SIGTERM");
      expect((await running.exited).code).toBe(0);
      live.delete(running);
    }
    const { rows } = await db.pool.query<{ body: string }>(
      `SELECT body FROM ${db.schema}.transcript WHERE session_key = 'web:x' ORDER BY seq`,
    );
    const records = rows.map((row) => JSON.parse(row.body) as { role: string; text?: string });
    // The conversation; hidden delivery intents and receipts (custom records) are left out.
    expect(records.filter((r) => r.role !== "custom").map((r) => r.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(records.filter((r) => r.role === "user").map((r) => r.text)).toEqual(["hello from x", "still me"]);
    // Both left the cluster when stopped.
    const { rows: left } = await db.pool.query(`SELECT process_id FROM ${db.schema}.processes`);
    expect(left).toEqual([]);
  }, 90_000);
});
