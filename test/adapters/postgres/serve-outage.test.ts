import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEchoModelServer } from "../../support/echo-model-server.js";
import type { FakeOpenAIServer } from "../../support/fake-openai-server.js";
import { usePrivatePostgres } from "../../support/private-postgres.js";
import {
  type ClusterMember,
  eventually,
  postRaw,
  startCluster,
  webDeliveries,
} from "../../support/serve-cluster.js";
import { useServeProcesses } from "../../support/serve-process.js";
import { SseRecorder } from "../../support/sse-recorder.js";

// The database stopped `-m immediate` under load (a crash or failover) and started again, with real
// `tiller serve --postgres` processes on a private server (never the machine's shared one): no process
// exits, POST answers 503 STORE_UNAVAILABLE with Retry-After and /readyz 503 while it is away (and
// /healthz 200); once it is back the processes are ready again, no lane row is left, every acknowledged
// message is answered or told why within lease + 30 s, nothing is delivered twice, and every session
// answers again; also with an owner killed -9 while the database is away.

const db = usePrivatePostgres();
const procs = useServeProcesses("tiller-outage");
let model: FakeOpenAIServer;
beforeAll(async () => {
  model = await startEchoModelServer();
});
afterAll(async () => {
  await model.close();
});

const SESSIONS = 12;

/**
 * Load on the processes `names`, the database stopped in the middle of it and started again; with
 * `kill`, the last process is killed -9 while the database is away (its sessions are taken over).
 */
async function throughOutage(prefix: string, names: string[], kill: boolean) {
  const all = await startCluster(procs, db, names, {
    config: { lanes: { main: 8 } },
    args: ["--model-url", model.url, "--model", "echo", "--lease", "3000"],
    env: { TILLER_LOG_LEVEL: "warn" },
  });
  const events = all.map((member) => procs.record(new SseRecorder(`${member.url}/v1/events`)));
  await Promise.all(events.map((recorder) => recorder.opened));
  let members = all;
  const acked: Array<{ session: string; text: string }> = [];
  const post = async (n: number, s: number, m: number) => {
    const text = `q${s}-${m}`;
    const result = await postRaw(
      members[n % members.length]!,
      `web:${prefix}${s}`,
      text,
      `${prefix}${s}-m${m}`,
    );
    if (
      result.status === 200 &&
      ["started", "queued", "steered", "collected"].includes(result.body.ack!.disposition)
    )
      acked.push({ session: `web:${prefix}${s}`, text });
    return result;
  };
  // Load, and the database stops in the middle of it (turns, deliveries, claims in flight).
  const inFlight: Array<Promise<unknown>> = [];
  for (let m = 0; m < 3; m++)
    for (let s = 0; s < SESSIONS; s++) inFlight.push(post(s + m, s, m).catch(() => undefined));
  // This test's own sessions (the schema keeps the deliveries of the test before it).
  const ours = async () => (await webDeliveries(db)).filter((r) => r.session_key.startsWith(`web:${prefix}`));
  await eventually("some answers", async () => (await ours()).length >= 4, 30_000);
  await db.server.halt();
  await Promise.all(inFlight);
  // Acknowledged messages to settle (at least those already answered).
  expect(acked.length).toBeGreaterThanOrEqual(4);

  // While it is away: 503 STORE_UNAVAILABLE with Retry-After, /readyz 503, /healthz 200, nobody exits.
  const refused = await postRaw(members[0]!, `web:${prefix}0`, "during", `${prefix}0-during`);
  expect(refused.status).toBe(503);
  expect(refused.body.error?.code).toBe("STORE_UNAVAILABLE");
  expect(Number(refused.retryAfter)).toBeGreaterThan(0);
  for (const member of members) {
    expect((await fetch(`${member.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${member.url}/healthz`)).status).toBe(200);
  }
  await new Promise((resolve) => setTimeout(resolve, 3000));
  for (const member of members) expect(member.proc.exitCode).toBeNull();
  if (kill) {
    // An owner dies while the database is away: its sessions wait for the database and its lease.
    const victim = members[members.length - 1]!;
    victim.proc.kill("SIGKILL");
    await victim.exited;
    members = members.slice(0, -1);
  }

  await db.server.restart();
  const back = Date.now();
  for (const member of members)
    await eventually(
      `${member.name} ready again`,
      async () => (await fetch(`${member.url}/readyz`)).status === 200,
      30_000,
    );

  // No lane row outlives the turn that held it (an ended run's row is not renewed, and its return is
  // tried again once the database answers).
  await eventually(
    "no lane row left",
    async () => {
      const lanes = await db.pool.query(`SELECT count(*)::int AS n FROM ${db.schema}.lane_runs`);
      return lanes.rows[0].n === 0;
    },
    30_000,
  );
  // Every acknowledged message is answered, or its session told why, within lease + 30 s of the
  // database being back (a waiting task whose row a reaper dropped meanwhile is enqueued again).
  const open = async () => {
    const rows = await webDeliveries(db);
    return acked.filter(
      ({ session, text }) =>
        !rows.some(
          (r) => r.session_key === session && (r.text === `Answer to: ${text}` || r.kind === "notice"),
        ),
    );
  };
  await eventually(
    "every acknowledged message answered or told why",
    async () => (await open()).length === 0,
    33_000 - (Date.now() - back),
  ).catch(async (error: unknown) => {
    const left = await open();
    await explain(
      left.map((m) => m.session),
      all,
      events,
    );
    throw new Error(`${String(error)}; not settled: ${JSON.stringify(left)}`);
  });
  console.info(
    `outage (${kill ? "an owner killed -9 meanwhile" : "no kill"}): every acknowledged message settled ${Date.now() - back} ms after the database was back`,
  );
  // Nothing twice: no reply and no notice reached a session more than once.
  const seen = new Map<string, number>();
  for (const row of await webDeliveries(db)) {
    const key = `${row.session_key} ${row.kind} ${row.text}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const twice = [...seen].filter(([key, n]) => n > 1 && key.startsWith(`web:${prefix}`));
  if (twice.length > 0) await explain([...new Set(twice.map(([key]) => key.split(" ")[0]!))], all, events);
  expect(twice).toEqual([]);
  // No session blocked: a new message to each is answered.
  for (let s = 0; s < SESSIONS; s++) await post(s, s, 9);
  await eventually(
    "every session answers again",
    async () => {
      const rows = await webDeliveries(db);
      return [...Array(SESSIONS).keys()].every((s) =>
        rows.some((r) => r.session_key === `web:${prefix}${s}` && r.text === `Answer to: q${s}-9`),
      );
    },
    30_000,
  );
  for (const member of members) expect(member.proc.exitCode).toBeNull();
  // Gone before the next test, whose cluster shares the schema.
  for (const member of members) member.proc.kill("SIGTERM");
  await Promise.all(all.map((member) => member.exited));
}

/** On failure: what each process logged and emitted about the sessions left, and their rows. */
async function explain(sessions: string[], members: ClusterMember[], events: SseRecorder[]) {
  const lines: string[] = [];
  for (const [i, member] of members.entries()) {
    for (const line of member.stderr().split("\n"))
      if (sessions.some((s) => line.includes(s))) lines.push(`${member.name} log ${line}`);
    for (const event of events[i]!.events)
      if (sessions.some((s) => JSON.stringify(event.data).includes(s)))
        lines.push(`${member.name} event ${JSON.stringify(event.data)}`);
  }
  for (const table of [
    "inbox",
    "lane_runs",
    "session_owners",
    "delivery_intents",
    "delivery_claims",
    "web_deliveries",
    "follow_ups",
    "session_state",
  ]) {
    const { rows } = await db.pool.query(`SELECT * FROM ${db.schema}.${table} WHERE session_key = ANY($1)`, [
      sessions,
    ]);
    for (const row of rows) lines.push(`${table} ${JSON.stringify(row)}`);
  }
  console.error(lines.join("\n"));
}

describe("tiller serve --postgres through a database outage", () => {
  it(
    "answers 503 while the database is away, and once it is back settles every acknowledged message",
    () => throughOutage("s", ["a", "b"], false),
    180_000,
  );

  it(
    "settles every acknowledged message when an owner is killed -9 during the outage",
    () => throughOutage("k", ["c", "d", "e"], true),
    180_000,
  );
});
