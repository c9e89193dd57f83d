/**
 * PostgreSQL figures: claim latency of the cluster lanes (run() to the task's start, a free slot), and
 * with 50,000 rows waiting (the claim as the lanes run it against a full pass over the queue),
 * turns per second of three gateway processes on one database against one process on the JSONL store
 * (the same workload, in the same run, as a ratio), the takeover time after kill -9 against the
 * lease (of a lane slot, and of a whole session whose turn is resumed elsewhere), and the steer latency
 * from `receive()` on one process to the run on another holding the message. Uses TILLER_DATABASE_URL, else TILLER_TEST_DATABASE_URL, else 127.0.0.1:5432/test; skipped with
 * a line saying so when none answers. Run alone with `npx tsx bench/postgres.bench.ts`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { JsonlStore } from "../src/adapters/jsonl/jsonl-store.js";
import { createClusterSessions } from "../src/adapters/postgres/cluster-sessions.js";
import { PostgresStore } from "../src/adapters/postgres/postgres-store.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { createClusterLanes } from "../src/lanes/cluster/cluster-lanes.js";
import { silentLogger } from "../src/logger.js";
import type { ModelProvider } from "../src/ports/model.js";
import type { ToolDefinition } from "../src/ports/tool.js";
import type pg from "pg";
import { backendCpuMs, benchDatabase, cpuSince, type Figures, percentile, round } from "./bench-support.js";
import { claimBacklog } from "./claim-backlog.js";
import { CountingChannel, instantModel, playWorkload } from "./cluster-workload.js";

const PROCESSES = 3;
const SESSIONS_PER_PROCESS = 8;
const MESSAGES = 10;
/** Messages per session played before the measured ones, by every process on both sides. */
const WARMUP_MESSAGES = 3;
const CAPACITY = 8;
const CLAIMS = 200;
const LEASE_MS = 2000;
const STEERS = 60;

export async function benchPostgres(): Promise<Figures> {
  const database = await benchDatabase();
  if ("skipped" in database) {
    console.log(`postgres bench skipped: ${database.skipped}`);
    return { skipped: `skipped: ${database.skipped}` };
  }
  const { url, admin } = database;
  const schema = `bench_${randomBytes(4).toString("hex")}`;
  try {
    return {
      ...(await claimLatency(url, schema)),
      ...(await claimBacklog(url, schema, 50_000)),
      ...(await turnsPerSecond(url, schema, admin)),
      ...(await takeover(url, schema)),
      ...(await steerLatency(url, `${schema}_s`)),
      ...(await sessionTakeover(url, `${schema}_t`)),
    };
  } finally {
    for (const name of [schema, `${schema}_s`, `${schema}_t`])
      await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`).catch(() => {});
    await admin.end();
  }
}

/** Sequential runs on a lane with a free slot: the claim's own round trips, nothing waits. */
async function claimLatency(url: string, schema: string): Promise<Figures> {
  const lanes = await createClusterLanes({ url, schema, capacity: { claim: 1 } });
  const times: number[] = [];
  for (let i = 0; i < CLAIMS; i++) {
    const asked = performance.now();
    await lanes.run({ session: `claim-${i}`, lane: "claim" }, async () => {
      times.push(performance.now() - asked);
    });
  }
  await lanes.close();
  times.sort((a, b) => a - b);
  return { "claim.p50Ms": round(percentile(times, 50)), "claim.p99Ms": round(percentile(times, 99)) };
}

export async function turnsPerSecond(url: string, schema: string, admin: pg.Client): Promise<Figures> {
  const turns = PROCESSES * SESSIONS_PER_PROCESS * MESSAGES;
  // The cluster: every process plays its own sessions; the capacity is shared.
  const children = Array.from({ length: PROCESSES }, (_, p) => {
    const name = `g${p}`;
    const sessions = Array.from({ length: SESSIONS_PER_PROCESS }, (_, i) => `web:${name}-${i}`);
    return startChild("gateway", {
      url,
      schema,
      name,
      capacity: { main: CAPACITY },
      workload: { sessions, messages: MESSAGES },
      warmup: { sessions: sessions.map((s) => `${s}-warm`), messages: WARMUP_MESSAGES },
      countSql: true,
    });
  });
  await Promise.all(children.map((c) => c.fact("ready")));
  const backends = "tiller g_%";
  const dbBefore = await backendCpuMs(admin, backends);
  const go = Date.now();
  for (const c of children) c.child.stdin!.write("go\n");
  const done = await Promise.all(children.map((c) => c.fact("done")));
  const clusterSeconds = (Math.max(...done.map((d) => Number(d.at))) - go) / 1000;
  const dbCpuMs = cpuSince(dbBefore, await backendCpuMs(admin, backends));
  const clusterCpuMs = done.reduce((sum, d) => sum + Number(d.cpuMs), 0);
  const sum = (key: string) => done.reduce((total, d) => total + Number(d[key]), 0);
  if (process.env.TILLER_BENCH_SQL_DETAIL) {
    const byText = new Map<string, number>();
    for (const d of done)
      for (const [text, n] of Object.entries(d.byText as Record<string, number>))
        byText.set(text, (byText.get(text) ?? 0) + n);
    for (const [text, n] of [...byText].sort((a, b) => b[1] - a[1]))
      console.log(`${round(n / turns, 2)}\t${text}`);
  }
  // Each process stops its gateway and exits by itself once done.
  await Promise.all(children.map((c) => c.fact("stopped").catch(() => undefined)));
  for (const c of children) c.child.kill();
  // One process, the embedded default: JSONL store, in-process lanes, the same workload and capacity.
  const dir = await mkdtemp(join(tmpdir(), "tiller-bench-jsonl-"));
  const store = await JsonlStore.openDir({ dir });
  const channel = new CountingChannel();
  const gateway = createGateway({
    config: { queue: { mode: "followup" }, lanes: { main: CAPACITY } },
    model: instantModel(),
    channels: { web: channel },
    store,
    logger: silentLogger,
  });
  await gateway.start();
  const sessions = Array.from({ length: PROCESSES * SESSIONS_PER_PROCESS }, (_, i) => `web:one-${i}`);
  const warm = sessions.map((s) => `${s}-warm`);
  await playWorkload(gateway, channel, { sessions: warm, messages: WARMUP_MESSAGES });
  const cpu = process.cpuUsage();
  const singleSeconds = (await playWorkload(gateway, channel, { sessions, messages: MESSAGES })) / 1000;
  const used = process.cpuUsage(cpu);
  await gateway.stop();
  await rm(dir, { recursive: true, force: true });
  const cluster = turns / clusterSeconds;
  const single = turns / singleSeconds;
  return {
    "turns.cluster3.perSecond": Math.round(cluster),
    "turns.jsonl1.perSecond": Math.round(single),
    "turns.ratio": round(cluster / single, 3),
    "turns.ratio.target": ">= 1",
    // Where the time goes: CPU per turn of the three processes, of their database backends, of the one.
    "turns.cluster3.cpuMsPerTurn": round(clusterCpuMs / turns),
    "turns.cluster3.dbCpuMsPerTurn": round(dbCpuMs / turns),
    "turns.jsonl1.cpuMsPerTurn": round((used.user + used.system) / 1000 / turns),
    // Everything the three processes sent, background loops included, per turn.
    "turns.cluster3.statementsPerTurn": round(sum("statements") / turns, 1),
    "turns.cluster3.commitsPerTurn": round(sum("commits") / turns, 1),
    "turns.cluster3.durableCommitsPerTurn": round(sum("durableCommits") / turns, 1),
  };
}

/** kill -9 of the process holding a session; another process waits for it: how long until it runs. */
async function takeover(url: string, schema: string): Promise<Figures> {
  const holder = startChild("hold", {
    url,
    schema,
    name: "holder",
    capacity: { main: CAPACITY },
    session: "web:held",
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  await holder.fact("started");
  const heir = await createClusterLanes({ url, schema, leaseMs: LEASE_MS, pollMs: 100 });
  let startedAt = 0;
  const taken = heir.run({ session: "web:held" }, async () => {
    startedAt = Date.now();
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const killedAt = Date.now();
  holder.child.kill("SIGKILL");
  await taken;
  await heir.close();
  return { "takeover.ms": startedAt - killedAt, "takeover.leaseMs": LEASE_MS };
}

/** A gateway of the cluster in this process: lanes, store, session ownership (its own name). */
async function member(
  url: string,
  schema: string,
  name: string,
  model: ModelProvider,
  tools: ToolDefinition[],
) {
  const lanes = await createClusterLanes({
    url,
    schema,
    processId: name,
    capacity: { main: CAPACITY },
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  const store = await PostgresStore.connect({ url, schema, fences: lanes });
  const cluster = await createClusterSessions({
    url,
    schema,
    processId: name,
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  const gateway = createGateway({
    model,
    tools,
    channels: { web: new CountingChannel() },
    store,
    lanes,
    cluster,
    logger: silentLogger,
  });
  await gateway.start();
  return {
    gateway,
    async close() {
      await gateway.stop();
      await cluster.close();
      await lanes.close();
    },
  };
}

/**
 * Two gateways on one database; a turn runs on B, waiting in a tool. A steer is sent to A: the time
 * from A's `receive()` until B's session has applied it to the running turn (B's own ack of it), the
 * forward through the inbox row and the NOTIFY included.
 */
async function steerLatency(url: string, schema: string): Promise<Figures> {
  const gates = new Map<string, () => void>();
  const hold: ToolDefinition = {
    name: "hold",
    description: "waits until the bench lets it go",
    cancellable: true,
    async execute(_args, context) {
      await new Promise<void>((resolve) => gates.set(context.session, resolve));
      return "held";
    },
  };
  const model: ModelProvider = {
    async complete(request) {
      const turn = request.context.slice(request.turnStart);
      if (!turn.some((message) => message.role === "toolResult"))
        return { text: "", toolCalls: [{ callId: `${request.runId}-c`, name: "hold", args: {} }] };
      return { text: "done", toolCalls: [] };
    },
  };
  const a = await member(url, schema, "steer-a", model, [hold]);
  const b = await member(url, schema, "steer-b", model, [hold]);
  const times: number[] = [];
  for (let i = 0; i < STEERS; i++) {
    const session = `web:steer-${i}`;
    const holding = new Promise<void>((resolve) => {
      const off = b.gateway.subscribe((event) => {
        if (event.type === "tool.started" && event.session === session) {
          off();
          resolve();
        }
      });
    });
    await b.gateway.receive({ session, channel: "web", text: "start", id: "m1" });
    await holding;
    let sent = 0;
    const applied = new Promise<number>((resolve) => {
      const off = b.gateway.subscribe((event) => {
        if (event.type === "message.acked" && event.session === session && event.messageId === "m2") {
          off();
          resolve(performance.now() - sent);
        }
      });
    });
    sent = performance.now();
    const ack = await a.gateway.receive({ session, channel: "web", text: "steer this", id: "m2" });
    if (ack.disposition !== "steered") throw new Error(`steer bench: the steer was ${ack.disposition}`);
    times.push(await applied);
    gates.get(session)?.();
  }
  await a.close();
  await b.close();
  times.sort((x, y) => x - y);
  return { "steer.p50Ms": round(percentile(times, 50)), "steer.p99Ms": round(percentile(times, 99)) };
}

/**
 * kill -9 of the process that owns a session mid-turn (stuck in a model call): how long until another
 * process has taken the session over and its cut-off turn has started again there.
 */
async function sessionTakeover(url: string, schema: string): Promise<Figures> {
  const owner = startChild("own", {
    url,
    schema,
    name: "owner",
    capacity: { main: CAPACITY },
    session: "web:owned",
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  await owner.fact("started");
  let adoptedAt = 0;
  let resumedAt = 0;
  const answered = instantModel();
  const heir = await member(url, schema, "heir", answered, []);
  const resumed = new Promise<void>((resolve) =>
    heir.gateway.subscribe((event) => {
      if (event.type === "session.adopted" && event.session === "web:owned") adoptedAt = Date.now();
      if (event.type === "turn.started" && event.session === "web:owned") {
        resumedAt = Date.now();
        resolve();
      }
    }),
  );
  const killedAt = Date.now();
  owner.child.kill("SIGKILL");
  await resumed;
  await heir.close();
  return {
    "sessionTakeover.adoptedMs": adoptedAt - killedAt,
    "sessionTakeover.resumedMs": resumedAt - killedAt,
    "sessionTakeover.leaseMs": LEASE_MS,
  };
}

function startChild(mode: string, args: Record<string, unknown>) {
  const compiled = import.meta.url.endsWith(".js");
  const file = fileURLToPath(new URL(`./postgres-child.${compiled ? "js" : "ts"}`, import.meta.url));
  const argv = [...(process.env.S36_PROF ? ["--cpu-prof", "--cpu-prof-dir=tmp/prof"] : []), ...(compiled ? [] : ["--import", "tsx"]), file, mode, JSON.stringify(args)];
  const child: ChildProcess = spawn(process.execPath, argv, { stdio: ["pipe", "pipe", "inherit"] });
  const facts: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    facts.push(JSON.parse(line));
    for (const wake of waiters.splice(0)) wake();
  });
  return {
    child,
    async fact(event: string): Promise<Record<string, unknown>> {
      for (;;) {
        const found = facts.find((f) => f.event === event);
        if (found) return found;
        if (child.exitCode !== null) throw new Error(`postgres-child ${mode} exited before "${event}"`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchPostgres());
  process.exit(0);
}
