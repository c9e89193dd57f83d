/**
 * Turns per second over HTTP: three real `tiller serve --postgres` processes on one database against
 * one `tiller serve --store DIR` process (JSONL), in one run. The same workload on both sides: 60
 * sessions × 5 follow-ups, `POST /v1/sessions/{key}/messages` (mode `followup`), posted round-robin to
 * the three processes (all to the one), a model server that answers at once (OpenAI's streaming wire
 * format), `lanes.main: 16`. A round's time runs from its first POST until every message was answered
 * (`final.delivered` on the processes' `GET /v1/events?types=...` streams). Each side is warmed up
 * first, until each process has answered `WARM_TURNS` turns (its JIT settled: what a gateway that has
 * been up for a while runs on); the first warm-up round of each side is reported too, as a cold start.
 * Then the sides take turns (cluster, one, one, cluster), each round half the sessions, so that the
 * rest of the machine's load weighs on both; such a block (the workload once a side) runs `MEASURED`
 * times, and the lowest and highest block's ratio are reported beside the whole phase's. Also: the CPU
 * per turn of the processes and of their database backends, and POSTs refused (anything but 200).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type pg from "pg";
import { followSse } from "../src/cli/sse-client.js";
import { backendCpuMs, benchDatabase, cpuSince, type Figures, round } from "./bench-support.js";

/** Sessions of one round: two rounds a side make the workload's 60 sessions × 5 messages. */
const SESSIONS = 30;
const MESSAGES = 5;
const CAPACITY = 16;
const TURNS = SESSIONS * MESSAGES;
/** POSTs in flight at once (a client's connection pool). */
const IN_FLIGHT = 64;
/** Messages per session in a warm-up round: under the queue's cap (20), so none is dropped. */
const WARM_MESSAGES = 15;
const WARM_ROUND = SESSIONS * WARM_MESSAGES;
/**
 * Turns each process answers before the measured rounds (`TILLER_BENCH_SERVE_WARMUP_TURNS`): about
 * where a process's TurboFan threads fall quiet on this workload (`perf`: under 2% of its CPU after
 * about 4,000 turns; 20–30% in its first few hundred).
 */
const WARM_TURNS = Math.max(1, Number(process.env.TILLER_BENCH_SERVE_WARMUP_TURNS ?? 4500) || 1);
/**
 * Times each side answers the workload in the measured phase (`TILLER_BENCH_SERVE_MEASURED`), in
 * blocks of cluster, JSONL, JSONL, cluster rounds: one workload is under a second a side, and a run of
 * other processes on the machine for that long moved a single workload's ratio by up to 40%.
 */
const MEASURED = Math.max(1, Number(process.env.TILLER_BENCH_SERVE_MEASURED ?? 4) || 1);
/** A round that gets no new answer for this long fails the bench (a lost message, not a slow one). */
const STALL_MS = 30_000;

/** An OpenAI-compatible server that streams "Answer to: <last user message>" at once. */
async function echoModel(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
      messages?: Array<{ role: string; content: unknown }>;
    };
    const last = [...(body.messages ?? [])].reverse().find((m) => m.role === "user");
    const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
    const frame = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "echo", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(frame({ role: "assistant", content: "" }));
    res.write(frame({ content: `Answer to: ${text}` }));
    res.write(frame({}, "stop"));
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Serve {
  child: ChildProcess;
  url: string;
  processId: string | undefined;
  /** Answers (`final.delivered`) seen per session. */
  finals: Map<string, number>;
  /** Messages forwarded to another process's session, and sessions adopted here (their state read). */
  forwarded: number;
  adopted: number;
  onFinal: (() => void) | undefined;
  stop(): Promise<void>;
}

/** Starts `tiller serve --port 0 ARGS` (the compiled CLI, or the sources under tsx) and follows its events. */
async function startServe(args: string[]): Promise<Serve> {
  const compiled = import.meta.url.endsWith(".js");
  const cli = fileURLToPath(new URL(`../src/cli.${compiled ? "js" : "ts"}`, import.meta.url));
  // TILLER_BENCH_CPU_PROF=DIR: each process writes a V8 CPU profile there (node --cpu-prof) when it exits.
  const profile = process.env.TILLER_BENCH_CPU_PROF;
  const child = spawn(
    process.execPath,
    [
      ...(profile
        ? [
            "--cpu-prof",
            `--cpu-prof-dir=${profile}`,
            `--cpu-prof-interval=${process.env.TILLER_BENCH_CPU_PROF_INTERVAL ?? 1000}`,
          ]
        : []),
      ...(compiled ? [] : ["--import", "tsx"]),
      cli,
      "serve",
      "--port",
      "0",
      ...args,
    ],
    // TILLER_DATABASE_URL (which names the bench's database) would make the one process a PostgreSQL
    // one too, on the default schema, where the next run's message ids are duplicates of this run's.
    {
      env: { ...process.env, TILLER_DATABASE_URL: undefined, TILLER_LOG_LEVEL: "error" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match && /\n {2}model:/.test(out)) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`tiller serve exited (${code}):\n${out}\n${err}`)));
  });
  const abort = new AbortController();
  const serve: Serve = {
    child,
    url,
    processId: /process (\S+)/.exec(out)?.[1],
    finals: new Map(),
    forwarded: 0,
    adopted: 0,
    onFinal: undefined,
    async stop() {
      abort.abort();
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      // A profiled process drains on SIGTERM so that its profile is written; others are killed at once.
      if (!profile) child.kill("SIGKILL");
      else {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await exited;
    },
  };
  let opened: () => void = () => {};
  const open = new Promise<void>((resolve) => {
    opened = resolve;
  });
  // Only what the bench counts: the answers, and the cluster's forwards and adoptions (a client that
  // waits for answers does not take every delta, lane step and state of the operator's page).
  void followSse(`${url}/v1/events?types=final.delivered,message.forwarded,session.adopted`, {
    signal: abort.signal,
    onOpen: () => opened(),
    onEvent(message) {
      if (message.event === "message.forwarded") serve.forwarded++;
      if (message.event === "session.adopted") serve.adopted++;
      if (message.event !== "final.delivered") return;
      const { session } = JSON.parse(message.data) as { session: string };
      serve.finals.set(session, (serve.finals.get(session) ?? 0) + 1);
      serve.onFinal?.();
    },
  });
  await open;
  return serve;
}

interface Round {
  ms: number;
  refused: number;
  twice: number;
}

/**
 * POSTs a JSON body on `agent`; resolves with the status once the response was read. `node:http` rather
 * than `fetch`: the bench process shares the two cores with whichever side saturates them, so what it
 * spends per POST is charged to that side (the cluster), not to one JSONL process with a core to spare.
 */
function post(agent: Agent, url: string, body: unknown): Promise<number> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
        res.once("error", reject);
      },
    );
    req.once("error", reject);
    req.end(payload);
  });
}

/** Posts one round's messages round-robin to `members`; resolves once every one was answered. */
async function playRound(members: Serve[], prefix: string, messages = MESSAGES): Promise<Round> {
  const posts: Array<{ member: Serve; session: string; text: string; id: string }> = [];
  const turns = SESSIONS * messages;
  let n = 0;
  for (let m = 0; m < messages; m++)
    for (let s = 0; s < SESSIONS; s++)
      posts.push({
        member: members[n++ % members.length]!,
        session: `web:${prefix}-s${s}`,
        text: `q${s}-${m}`,
        id: `${prefix}-${s}-${m}`,
      });
  const answered = () => {
    let total = 0;
    for (const member of members)
      for (const [session, count] of member.finals) if (session.startsWith(`web:${prefix}-`)) total += count;
    return total;
  };
  const started = performance.now();
  let refused = 0;
  let next = 0;
  // Connections kept alive for the round only: one left idle between rounds could be closed by the
  // server just as it is reused (a POST lost to the race, not to the server).
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  const client = async () => {
    while (next < posts.length) {
      const { member, session, text, id } = posts[next++]!;
      const status = await post(agent, `${member.url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
        text,
        id,
        mode: "followup",
      });
      if (status !== 200) refused++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, client));
  agent.destroy();
  let last = answered();
  let lastChange = performance.now();
  while (last < turns) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 500);
      for (const member of members)
        member.onFinal = () => {
          clearTimeout(timer);
          resolve();
        };
    });
    const now = answered();
    if (now !== last) lastChange = performance.now();
    else if (performance.now() - lastChange > STALL_MS)
      throw new Error(`serve throughput: ${turns - now} of ${turns} messages of ${prefix} unanswered`);
    last = now;
  }
  const ms = performance.now() - started;
  for (const member of members) member.onFinal = undefined;
  return { ms, refused, twice: last - turns };
}

/** CPU (ms, user + system) of processes by pid, from /proc (0 where it cannot be read). */
async function processCpuMs(pids: number[]): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // Not on this machine.
    }
  }
  return total;
}

interface Side {
  forwarded: number;
  adopted: number;
  ms: number;
  cpuMs: number;
  dbCpuMs: number;
  /** The bench process's own CPU (its model server, POSTs and event streams), all its threads. */
  benchCpuMs: number;
  refused: number;
  twice: number;
  windows: Array<{ pids: number[]; from: number; to: number }>;
}

function newSide(): Side {
  return {
    ms: 0,
    cpuMs: 0,
    dbCpuMs: 0,
    benchCpuMs: 0,
    refused: 0,
    twice: 0,
    forwarded: 0,
    adopted: 0,
    windows: [],
  };
}

async function measure(
  members: Serve[],
  prefix: string,
  admin: pg.Client | undefined,
  side: Side,
  messages = MESSAGES,
) {
  const pids = members.map((m) => m.child.pid!);
  const patterns = members.map((m) => `tiller ${m.processId}%`);
  const dbBefore: Array<Map<number, number>> = [];
  // One query at a time: the admin connection is a single client.
  if (admin) for (const pattern of patterns) dbBefore.push(await backendCpuMs(admin, pattern));
  const cpuBefore = await processCpuMs(pids);
  const moved = () => members.reduce((n, m) => [n[0]! + m.forwarded, n[1]! + m.adopted], [0, 0]);
  const [forwardedBefore, adoptedBefore] = moved();
  const from = process.hrtime.bigint();
  const benchBefore = process.cpuUsage();
  const played = await playRound(members, prefix, messages);
  const bench = process.cpuUsage(benchBefore);
  side.benchCpuMs += (bench.user + bench.system) / 1000;
  // With profiles: the measured windows (µs, the monotonic clock the profiles' timestamps use).
  side.windows.push({ pids, from: Number(from / 1000n), to: Number(process.hrtime.bigint() / 1000n) });
  const [forwardedAfter, adoptedAfter] = moved();
  side.forwarded += forwardedAfter! - forwardedBefore!;
  side.adopted += adoptedAfter! - adoptedBefore!;
  side.cpuMs += (await processCpuMs(pids)) - cpuBefore;
  if (admin)
    for (const [i, pattern] of patterns.entries())
      side.dbCpuMs += cpuSince(dbBefore[i]!, await backendCpuMs(admin, pattern));
  side.ms += played.ms;
  side.refused += played.refused;
  side.twice += played.twice;
}

/** One warm-up round on `members`, measured on its own. */
async function warmRound(members: Serve[], prefix: string): Promise<Side> {
  const side = newSide();
  await measure(members, prefix, undefined, side, WARM_MESSAGES);
  return side;
}

export async function benchServeThroughput(): Promise<Figures> {
  const database = await benchDatabase();
  if ("skipped" in database) {
    console.log(`serve throughput bench skipped: ${database.skipped}`);
    return { skipped: `skipped: ${database.skipped}` };
  }
  const { url, admin } = database;
  const schema = `bench_serve_${Math.random().toString(16).slice(2, 10)}`;
  const dir = await mkdtemp(join(tmpdir(), "tiller-bench-serve-"));
  const model = await echoModel();
  const { writeFile } = await import("node:fs/promises");
  const config = join(dir, "config.json");
  await writeFile(config, JSON.stringify({ lanes: { main: CAPACITY } }));
  const common = ["--config", config, "--model-url", model.url, "--model", "echo"];
  const started: Serve[] = [];
  try {
    const one = await startServe(["--store", join(dir, "one"), ...common]);
    started.push(one);
    const three: Serve[] = [];
    for (const name of ["a", "b", "c"]) {
      const member = await startServe([
        "--store",
        join(dir, name),
        ...common,
        "--postgres",
        url,
        "--schema",
        schema,
      ]);
      started.push(member);
      three.push(member);
    }
    const cluster = newSide();
    const single = newSide();
    // Warm-up (JIT, connections, prepared plans, the model's sockets) until every process has answered
    // as many turns as the others: a process's JIT compiles a function once that function has run often
    // enough, so each of the three, seeing a third of the cluster's turns, takes three times as many
    // rounds to get there. The sides take turns (up to three cluster rounds, then one JSONL round), so
    // the machine's load weighs on both.
    const warmRounds = {
      cluster: Math.ceil((3 * WARM_TURNS) / WARM_ROUND),
      jsonl: Math.ceil(WARM_TURNS / WARM_ROUND),
    };
    const warm = { cluster: [] as Side[], jsonl: [] as Side[] };
    // The cluster needs at most three rounds for each of the JSONL process's (ceilings of n and 3n).
    for (let r = 0; r < warmRounds.jsonl; r++) {
      while (warm.cluster.length < Math.min(3 * (r + 1), warmRounds.cluster))
        warm.cluster.push(await warmRound(three, `w3-${warm.cluster.length}`));
      warm.jsonl.push(await warmRound([one], `w1-${r}`));
    }
    // Each block is the workload once a side (60 sessions × 5 messages), its ratio kept for the spread.
    const blockRatios: number[] = [];
    for (let b = 0; b < MEASURED; b++) {
      const before = { cluster: cluster.ms, jsonl: single.ms };
      await measure(three, `m${b}c0`, admin, cluster);
      await measure([one], `m${b}j0`, undefined, single);
      await measure([one], `m${b}j1`, undefined, single);
      await measure(three, `m${b}c1`, admin, cluster);
      blockRatios.push((single.ms - before.jsonl) / (cluster.ms - before.cluster));
    }
    const turns = 2 * TURNS * MEASURED;
    const profile = process.env.TILLER_BENCH_CPU_PROF;
    if (profile)
      await writeFile(
        join(profile, "windows.json"),
        JSON.stringify({ cluster: cluster.windows, jsonl: single.windows, turnsPerSide: turns }),
      );
    const perSecond = (side: Side, n = turns) => n / (side.ms / 1000);
    const everySide = [cluster, single, ...warm.cluster, ...warm.jsonl];
    const [coldCluster, coldJsonl] = [warm.cluster[0]!, warm.jsonl[0]!];
    const [lastCluster, lastJsonl] = [warm.cluster.at(-1)!, warm.jsonl.at(-1)!];
    return {
      "serve.cluster3.perSecond": Math.round(perSecond(cluster)),
      "serve.jsonl1.perSecond": Math.round(perSecond(single)),
      "serve.ratio": round(perSecond(cluster) / perSecond(single), 3),
      "serve.ratio.target": ">= 1",
      // The same ratio for each block (each workload once a side, taking turns): how much it moves.
      "serve.ratio.blocks": MEASURED,
      "serve.ratio.lowestBlock": round(Math.min(...blockRatios), 3),
      "serve.ratio.highestBlock": round(Math.max(...blockRatios), 3),
      // The first warm-up round of each side: a cluster just started, its three JITs cold.
      "serve.coldStart.ratio": round(
        perSecond(coldCluster, WARM_ROUND) / perSecond(coldJsonl, WARM_ROUND),
        3,
      ),
      "serve.warmupTurnsPerProcess": WARM_TURNS,
      "serve.cluster3.cpuMsPerTurn.firstWarmupRound": round(coldCluster.cpuMs / WARM_ROUND),
      "serve.cluster3.cpuMsPerTurn.lastWarmupRound": round(lastCluster.cpuMs / WARM_ROUND),
      "serve.jsonl1.cpuMsPerTurn.firstWarmupRound": round(coldJsonl.cpuMs / WARM_ROUND),
      "serve.jsonl1.cpuMsPerTurn.lastWarmupRound": round(lastJsonl.cpuMs / WARM_ROUND),
      "serve.cluster3.cpuMsPerTurn": round(cluster.cpuMs / turns),
      "serve.cluster3.dbCpuMsPerTurn": round(cluster.dbCpuMs / turns),
      "serve.jsonl1.cpuMsPerTurn": round(single.cpuMs / turns),
      // The bench's own work shares the two cores: with the cluster, whose processes keep both busy, it
      // takes from the cluster; with the one JSONL process, it mostly runs on the core left over.
      "serve.benchProcess.cpuMsPerTurn.cluster3": round(cluster.benchCpuMs / turns),
      "serve.benchProcess.cpuMsPerTurn.jsonl1": round(single.benchCpuMs / turns),
      // Where the cluster's extra work comes from: messages a process forwarded to the session's owner
      // elsewhere, and sessions a process took up (its state and transcript read) after another gave it up.
      "serve.cluster3.forwardedShare": round(cluster.forwarded / turns),
      "serve.cluster3.adoptionsPerTurn": round(cluster.adopted / turns),
      "serve.refusedPosts": everySide.reduce((n, side) => n + side.refused, 0),
      "serve.refusedPosts.target": "<= 0",
      "serve.answeredTwice": everySide.reduce((n, side) => n + side.twice, 0),
      "serve.answeredTwice.target": "<= 0",
    };
  } finally {
    await Promise.all(started.map((serve) => serve.stop()));
    await model.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await benchServeThroughput();
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key}  ${value}`);
  process.exit(0);
}
