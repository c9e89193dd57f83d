/**
 * Turns per second of three gateway processes on one PostgreSQL against one process on the JSONL store:
 * the same workload (sessions × follow-up messages, a model that answers at once, the same lane
 * capacity), every process warmed up first. The two sides take turns (cluster, one, one, cluster) so
 * that a change in the machine's load during the run weighs on both alike; the ratio is of the totals.
 * With where the time goes: CPU per turn of the processes and of their database backends, and the
 * statements and commits the cluster sent per turn (its background loops included).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { JsonlStore } from "../src/adapters/jsonl/jsonl-store.js";
import { createGateway, type Gateway } from "../src/gateway/create-gateway.js";
import { silentLogger } from "../src/logger.js";
import { backendCpuMs, cpuSince, type Figures, round } from "./bench-support.js";
import { CountingChannel, instantModel, playWorkload, SlotTimer } from "./cluster-workload.js";
import { startChild } from "./start-child.js";

const PROCESSES = 3;
const SESSIONS_PER_PROCESS = 8;
const MESSAGES = 10;
const CAPACITY = 8;
/** Messages per session played before the measured ones, by every process on both sides. */
const WARMUP_MESSAGES = 10;
const TURNS = PROCESSES * SESSIONS_PER_PROCESS * MESSAGES;

interface Side {
  seconds: number;
  cpuMs: number;
  dbCpuMs: number;
  statements: number;
  commits: number;
  durableCommits: number;
  /** Time tasks of `main` held a slot (lane.started to lane.ended), summed over the turns. */
  slotMs: number;
  /** Grants a process got by another process's claim (named in its wake-up), and empty wake-ups. */
  toldGrants: number;
  emptyWakeUps: number;
}

const none = (): Side => ({
  seconds: 0,
  cpuMs: 0,
  dbCpuMs: 0,
  statements: 0,
  commits: 0,
  durableCommits: 0,
  slotMs: 0,
  toldGrants: 0,
  emptyWakeUps: 0,
});

function add(total: Side, one: Side): void {
  for (const key of Object.keys(total) as Array<keyof Side>) total[key] += one[key];
}

/** Three processes on one schema, each playing its own sessions; the capacity is the cluster's. */
async function cluster(url: string, schema: string, admin: pg.Client, round: number): Promise<Side> {
  const children = Array.from({ length: PROCESSES }, (_, p) => {
    const name = `g${round}p${p}`;
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
  try {
    await Promise.all(children.map((c) => c.fact("ready")));
    const backends = `tiller g${round}p%`;
    const dbBefore = await backendCpuMs(admin, backends);
    const go = Date.now();
    for (const c of children) c.child.stdin!.write("go\n");
    const done = await Promise.all(children.map((c) => c.fact("done")));
    const sum = (key: string) => done.reduce((total, d) => total + Number(d[key]), 0);
    if (process.env.TILLER_BENCH_SQL_DETAIL) printStatements(done);
    const side: Side = {
      seconds: (Math.max(...done.map((d) => Number(d.at))) - go) / 1000,
      cpuMs: sum("cpuMs"),
      dbCpuMs: cpuSince(dbBefore, await backendCpuMs(admin, backends)),
      statements: sum("statements"),
      commits: sum("commits"),
      durableCommits: sum("durableCommits"),
      slotMs: sum("slotMs"),
      toldGrants: sum("toldGrants"),
      emptyWakeUps: sum("emptyWakeUps"),
    };
    // Each process stops its gateway and exits by itself once done.
    await Promise.all(children.map((c) => c.fact("stopped").catch(() => undefined)));
    return side;
  } finally {
    for (const c of children) c.child.kill();
  }
}

function printStatements(done: Array<Record<string, unknown>>): void {
  const byText = new Map<string, number>();
  for (const d of done)
    for (const [text, n] of Object.entries(d.byText as Record<string, number>))
      byText.set(text, (byText.get(text) ?? 0) + n);
  for (const [text, n] of [...byText].sort((a, b) => b[1] - a[1]))
    console.log(`${round(n / TURNS, 2)}\t${text}`);
}

/** One process, the embedded default: JSONL store, in-process lanes, the same workload and capacity. */
async function single(round: number): Promise<Side> {
  const dir = await mkdtemp(join(tmpdir(), "tiller-bench-jsonl-"));
  const store = await JsonlStore.openDir({ dir });
  const channel = new CountingChannel();
  const gateway: Gateway = createGateway({
    config: { queue: { mode: "followup" }, lanes: { main: CAPACITY } },
    model: instantModel(),
    channels: { web: channel },
    store,
    logger: silentLogger,
  });
  try {
    await gateway.start();
    const count = PROCESSES * SESSIONS_PER_PROCESS;
    const sessions = Array.from({ length: count }, (_, i) => `web:one${round}-${i}`);
    const warm = sessions.map((s) => `${s}-warm`);
    await playWorkload(gateway, channel, { sessions: warm, messages: WARMUP_MESSAGES });
    const slots = new SlotTimer(gateway);
    const cpu = process.cpuUsage();
    slots.start();
    const ms = await playWorkload(gateway, channel, { sessions, messages: MESSAGES });
    const used = process.cpuUsage(cpu);
    const { heldMs } = slots.stop();
    return { ...none(), seconds: ms / 1000, cpuMs: (used.user + used.system) / 1000, slotMs: heldMs };
  } finally {
    await gateway.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function turnsPerSecond(url: string, schema: string, admin: pg.Client): Promise<Figures> {
  const three = none();
  const one = none();
  add(three, await cluster(url, schema, admin, 0));
  add(one, await single(0));
  add(one, await single(1));
  add(three, await cluster(url, schema, admin, 1));
  const turns = 2 * TURNS;
  const perSecond = (side: Side) => turns / side.seconds;
  const per = (value: number, digits = 2) => round(value / turns, digits);
  return {
    "turns.cluster3.perSecond": Math.round(perSecond(three)),
    "turns.jsonl1.perSecond": Math.round(perSecond(one)),
    "turns.ratio": round(perSecond(three) / perSecond(one), 3),
    "turns.ratio.target": ">= 1",
    "turns.cluster3.cpuMsPerTurn": per(three.cpuMs),
    "turns.cluster3.dbCpuMsPerTurn": per(three.dbCpuMs),
    "turns.jsonl1.cpuMsPerTurn": per(one.cpuMs),
    "turns.cluster3.statementsPerTurn": per(three.statements, 1),
    "turns.cluster3.commitsPerTurn": per(three.commits, 1),
    "turns.cluster3.durableCommitsPerTurn": per(three.durableCommits, 1),
    // Where the time goes: a turn's time in its slot, and the mean number of busy slots of `main`
    // (CAPACITY at most): when it is near CAPACITY, the cap is the limit, not the hand-over of slots.
    "turns.cluster3.slotMsPerTurn": per(three.slotMs, 1),
    "turns.jsonl1.slotMsPerTurn": per(one.slotMs, 1),
    "turns.cluster3.busySlots": round(three.slotMs / 1000 / three.seconds, 2),
    "turns.jsonl1.busySlots": round(one.slotMs / 1000 / one.seconds, 2),
    "turns.capacity": CAPACITY,
    // Turns whose slot another process's claim granted (the process was woken with its grant named).
    "turns.cluster3.grantedByOtherShare": round(three.toldGrants / turns, 2),
    "turns.cluster3.emptyWakeUpsPerTurn": per(three.emptyWakeUps, 2),
  };
}
