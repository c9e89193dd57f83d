/**
 * Gateway benchmarks: the whole runtime (gateway, session and run machines, lanes, in-memory store).
 *
 * (a) A 1,000-message scenario over 100 sessions, built in code and played by `runScenario` on the
 *     simulated clock: messages spread over ~20 s of simulated time, a third asking for a tool, many
 *     arriving while a turn runs (so they steer), a scripted model with delays. Wall time of the first
 *     run in the process and the median of warm runs (target < 1 s). The one-time cost of the first
 *     config parse (the regex safety check of the complaint patterns) is reported apart.
 * (b) receive → first model call: a zero-latency model records `performance.now()` when `complete()` is
 *     entered; timed from just before `gateway.receive()` on the system clock, each turn left to finish
 *     before the next message. Messages to live sessions (recently active: actor and window in memory),
 *     first messages of new sessions, and live sessions with growing windows. Median and p95 in µs
 *     (target median < 50 µs), with the process CPU time over the same window. Next to it, the floor:
 *     the bare actor chain of DESIGN.md §1 (session → lane slot → run → model call) with trivial
 *     machines, measured the same way (bench/actor-chain-floor.ts), and how far Tiller is above it.
 * (c) Heap per idle session: up to 100,000 sessions, one message each, the model answering at once;
 *     once all are idle, (heapUsed after − before) / sessions after gc() (target < 10 KB), split into
 *     the in-memory store's share (the transcripts: the embedded "disk") and the rest. The channel keeps
 *     nothing. BENCH_IDLE_BUDGET_S (default 0 = no limit) stops the fill early on a slow machine; the
 *     figure says how many sessions were made. Filling 100k sessions takes about two minutes here.
 *
 * `calibration.*` times (best of 7 runs) two tiny operations every turn performs several times: an XState
 * actor's life and an AbortController with a listener, to compare machines; plus the load average.
 *
 * Run alone with `node tmp/bench-build/bench/gateway.bench.js` after `npm run bench` compiled it, or
 * `npx tsx bench/gateway.bench.ts` from source (gc() is enabled through V8 flags when missing).
 */
import { loadavg } from "node:os";
import { pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createActor, setup } from "xstate";
import type { Channel, DeliveryReceipt } from "../src/adapters/channel.js";
import { MemoryStore } from "../src/adapters/memory-store.js";
import type { ModelProvider, ModelReply } from "../src/adapters/model.js";
import { settle } from "../src/adapters/simulated-clock.js";
import { SystemClock } from "../src/adapters/system-clock.js";
import { parseConfig } from "../src/config.js";
import { createGateway, type Gateway } from "../src/gateway.js";
import { silentLogger } from "../src/logger.js";
import { parseScenario } from "../src/scenario/load.js";
import { runScenario } from "../src/scenario/runner.js";
import type { Scenario } from "../src/scenario/schema.js";
import { actorChainFloor } from "./actor-chain-floor.js";

const SCENARIO_SESSIONS = 100;
const SCENARIO_MESSAGES_PER_SESSION = 10;
const SCENARIO_WARM_RUNS = 3;
const LATENCY_SESSIONS = 2_000;
const LATENCY_WARMUP = 300;
const IDLE_SESSIONS = envNumber("BENCH_IDLE_SESSIONS", 100_000);
const IDLE_BUDGET_MS = envNumber("BENCH_IDLE_BUDGET_S", 0) * 1000;
const IDLE_BATCH = 100;
const IDLE_WARMUP = 1_000;

type Figures = Record<string, number | string>;

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return process.env[name] !== undefined && Number.isFinite(value) && value >= 0 ? value : fallback;
}

/** Returns gc(), enabling it through V8 flags when node was started without --expose-gc. */
export function ensureGc(): (() => void) | undefined {
  const global = globalThis as { gc?: () => void };
  if (global.gc) return global.gc;
  try {
    setFlagsFromString("--expose-gc");
    global.gc = runInNewContext("gc") as () => void;
  } catch {
    // Heap figures are then marked approximate.
  }
  return global.gc;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

/** CPU time of the whole process (all threads), in µs. */
function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** Deterministic PRNG (mulberry32): every run plays the same scenario. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A channel that commits every send and keeps nothing, so the bench holds no per-session data. */
class NullChannel implements Channel {
  private counter = 0;
  async send(): Promise<DeliveryReceipt> {
    return { messageId: `out-${++this.counter}` };
  }
}

// ---------------------------------------------------------------------------------------------------
// (a) the 1,000-message scenario

/** The scenario of (a): `sessions` × `perSession` messages, deterministic for a given seed. */
export function buildScenario(
  sessions = SCENARIO_SESSIONS,
  perSession = SCENARIO_MESSAGES_PER_SESSION,
  seed = 42,
): Scenario {
  const random = prng(seed);
  const inbound: Array<{ at: number; session: string; channel: string; id: string; text: string }> = [];
  for (let s = 0; s < sessions; s++) {
    const session = `bench:${s}`;
    // Sessions start staggered over the first 5 s. Inside a session the gaps (150–1,650 ms) are often
    // shorter than a turn (250 ms plain, ~1.25 s with the tool, more with a re-check), so messages land
    // mid-turn and steer.
    let at = Math.floor(random() * 5_000);
    for (let k = 0; k < perSession; k++) {
      const wantsTool = random() < 1 / 3;
      inbound.push({
        at,
        session,
        channel: "bench",
        id: `${session}-m${k + 1}`,
        text: wantsTool
          ? `Please update the checklist item ${k + 1} of session ${s}`
          : `Question ${k + 1} from session ${s}: what about the deadline?`,
      });
      at += 150 + Math.floor(random() * 1_500);
    }
  }
  inbound.sort((a, b) => a.at - b.at);
  const raw = {
    name: `bench: ${inbound.length} messages over ${sessions} sessions`,
    config: {
      queue: { mode: "steer" },
      lanes: { main: 16 },
      staleReplyRecheck: { enabled: true, maxPasses: 1 },
    },
    model: [
      {
        when: { latestUser: "update", call: 1 },
        reply: { delayMs: 200, toolCalls: [{ name: "write_file", args: { path: "checklist.md" } }] },
      },
      { when: { recheck: true }, reply: { delayMs: 150, text: "Revised: {{latestUser}}" } },
      { when: { hasToolResult: "write_file" }, reply: { delayMs: 250, text: "Updated. {{latestUser}}" } },
      { reply: { delayMs: 250, text: "Re: {{latestUser}}" } },
    ],
    tools: { write_file: { durationMs: 800, result: "written", cancellable: false } },
    channels: { bench: { failSends: 0, omitMessageId: false } },
    inbound,
  };
  return parseScenario(JSON.stringify(raw), "bench-scenario.json");
}

async function benchScenario(): Promise<Figures> {
  // The first config parse checks the complaint patterns for catastrophic backtracking (once per
  // process, cached): a start-up cost, not a scenario cost.
  const p0 = performance.now();
  parseConfig({});
  const firstParseMs = performance.now() - p0;

  const scenario = buildScenario();
  const wall: number[] = [];
  const cpu: number[] = [];
  let summary: Figures = {};
  for (let i = 0; i <= SCENARIO_WARM_RUNS; i++) {
    const c0 = cpuMicros();
    const t0 = performance.now();
    const { result } = await runScenario(scenario);
    wall.push(performance.now() - t0);
    cpu.push((cpuMicros() - c0) / 1000);
    if (i > 0) continue;
    if (result.acks.length !== scenario.inbound.length) {
      throw new Error(`scenario: ${result.acks.length} acks for ${scenario.inbound.length} messages`);
    }
    const dispositions = new Map<string, number>();
    for (const ack of result.acks) {
      dispositions.set(ack.disposition, (dispositions.get(ack.disposition) ?? 0) + 1);
    }
    summary = {
      "scenario.messages": scenario.inbound.length,
      "scenario.sessions": new Set(scenario.inbound.map((message) => message.session)).size,
      "scenario.acks": [...dispositions].map(([disposition, count]) => `${count} ${disposition}`).join(", "),
      "scenario.modelCalls": result.modelCalls.length,
      "scenario.toolCalls": result.toolCalls.length,
      "scenario.rechecksFired": result.events.filter((event) => event.type === "recheck.fired").length,
      "scenario.replies": result.deliveries.filter((delivery) => delivery.kind === "reply").length,
      "scenario.simulatedSeconds": round(
        result.events.reduce((last, event) => Math.max(last, event.at), 0) / 1000,
        1,
      ),
    };
  }
  return {
    "startup.firstConfigParseMs": round(firstParseMs, 1),
    "scenario.wallMs.firstRun": round(wall[0]!, 1),
    "scenario.wallMs.firstRun.target": "< 1000",
    "scenario.wallMs.warmMedian": round(median(wall.slice(1)), 1),
    "scenario.wallMs.warmMedian.target": "< 1000",
    "scenario.cpuMs.firstRun": round(cpu[0]!, 1),
    "scenario.cpuMs.warmMedian": round(median(cpu.slice(1)), 1),
    ...summary,
  };
}

// ---------------------------------------------------------------------------------------------------
// (b) receive → first model call

/** A zero-latency model that stamps (wall and CPU time) the moment each call enters it. */
class StampingModel implements ModelProvider {
  enteredAt = Number.NaN;
  enteredCpu = Number.NaN;
  private waiter: (() => void) | null = null;

  async complete(): Promise<ModelReply> {
    this.enteredAt = performance.now();
    this.enteredCpu = cpuMicros();
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
    return { text: "ok", toolCalls: [] };
  }

  /** Resolves at the next call's entry. */
  nextCall(): Promise<void> {
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }
}

/** Times one message's receive → first model call, in µs of wall and CPU time. */
async function timeFirstCall(
  gateway: Gateway,
  model: StampingModel,
  session: string,
  id: string,
): Promise<{ wall: number; cpu: number }> {
  const called = model.nextCall();
  const c0 = cpuMicros();
  const t0 = performance.now();
  const ack = gateway.receive({ session, channel: "bench", text: "hello there", id });
  await called;
  const timing = { wall: (model.enteredAt - t0) * 1000, cpu: model.enteredCpu - c0 };
  await ack;
  // The turn delivers and the session rests before the next message.
  await settle();
  return timing;
}

function firstCallGateway(model: StampingModel): Gateway {
  return createGateway({
    model,
    channels: { bench: new NullChannel() },
    clock: new SystemClock(),
    logger: silentLogger,
  });
}

/**
 * (b1) a live session (it answered recently: its actor and context window are in memory), with a short
 * history (about 10 earlier exchanges): the common case. (b2) the first message of a new session.
 */
async function benchFirstCall(): Promise<Figures> {
  const model = new StampingModel();
  const gateway = firstCallGateway(model);
  await gateway.start();
  const live: Array<{ wall: number; cpu: number }> = [];
  const fresh: Array<{ wall: number; cpu: number }> = [];
  const liveSessions = 200;
  // Interleaved, so both kinds run on equally warm code (one after the other, the second one gained).
  for (let i = 0; i < LATENCY_WARMUP + LATENCY_SESSIONS; i++) {
    // Sessions take turns, so each keeps a short window (at most 10 exchanges before the bench ends).
    const timing = await timeFirstCall(gateway, model, `live:${i % liveSessions}`, `l${i}`);
    if (i >= LATENCY_WARMUP + liveSessions) live.push(timing);
    const first = await timeFirstCall(gateway, model, `new:${i}`, `n${i}`);
    if (i >= LATENCY_WARMUP) fresh.push(first);
  }
  await gateway.stop();
  const wallOf = (timings: typeof live) => timings.map((timing) => timing.wall).sort((a, b) => a - b);
  const cpuOf = (timings: typeof live) => timings.map((timing) => timing.cpu).sort((a, b) => a - b);
  const liveWall = wallOf(live);
  const freshWall = wallOf(fresh);
  const floor = await actorChainFloor(LATENCY_SESSIONS, LATENCY_WARMUP);
  return {
    "firstCall.liveSession.messages": live.length,
    "firstCall.liveSession.wallUs.median": round(percentile(liveWall, 50), 1),
    "firstCall.liveSession.wallUs.median.target": "< 50",
    "firstCall.liveSession.wallUs.p95": round(percentile(liveWall, 95), 1),
    "firstCall.liveSession.cpuUs.median": round(percentile(cpuOf(live), 50), 1),
    "firstCall.newSession.messages": fresh.length,
    "firstCall.newSession.wallUs.median": round(percentile(freshWall, 50), 1),
    "firstCall.newSession.wallUs.p95": round(percentile(freshWall, 95), 1),
    "firstCall.newSession.cpuUs.median": round(percentile(cpuOf(fresh), 50), 1),
    // The bare actor chain of DESIGN.md §1 with trivial machines: XState's own cost for it here.
    "firstCall.actorChainFloor.wallUs.median": round(floor.median, 1),
    "firstCall.actorChainFloor.wallUs.p95": round(floor.p95, 1),
    "firstCall.liveSession.aboveFloorUs": round(percentile(liveWall, 50) - floor.median, 1),
    ...(await benchWindowScaling()),
  };
}

/**
 * (b3) how the first-call overhead grows with the live session's context window: the run is handed the
 * window as model messages (the model needs all of it), so some cost per record is inherent.
 */
async function benchWindowScaling(): Promise<Figures> {
  const figures: Figures = {};
  // Up to 1,000 records: past `limits.maxWindowRecords` (2,000) a turn rotates the window away.
  for (const exchanges of [10, 100, 500]) {
    const model = new StampingModel();
    const gateway = firstCallGateway(model);
    await gateway.start();
    // One session grows to `exchanges` turns (two records each); the next 200 turns are timed, the
    // window growing by two records each.
    const timings: number[] = [];
    for (let i = 0; i < exchanges + 200; i++) {
      const timing = await timeFirstCall(gateway, model, "scaling", `s${i}`);
      if (i >= exchanges) timings.push(timing.wall);
    }
    await gateway.stop();
    const med = median(timings);
    figures[`firstCall.windowFrom${exchanges * 2}Records.wallUs.median`] = round(med, 1);
  }
  return figures;
}

// ---------------------------------------------------------------------------------------------------
// (c) heap per idle session

class InstantModel implements ModelProvider {
  async complete(): Promise<ModelReply> {
    return { text: "ok", toolCalls: [] };
  }
}

function idleGateway(store: MemoryStore, counter: { turnsEnded: number }): Gateway {
  const gateway = createGateway({
    model: new InstantModel(),
    channels: { bench: new NullChannel() },
    clock: new SystemClock(),
    store,
    logger: silentLogger,
    // Enough slots that no turn waits: waiting is the lane bench's subject.
    config: { lanes: { main: 4 * IDLE_BATCH } },
  });
  gateway.subscribe((event) => {
    if (event.type === "turn.ended") counter.turnsEnded++;
  });
  return gateway;
}

/** One message for each of `count` fresh sessions, in batches; stops at `deadline`. Returns the count. */
async function fillSessions(
  gateway: Gateway,
  prefix: string,
  count: number,
  deadline: number,
): Promise<number> {
  let made = 0;
  while (made < count && performance.now() < deadline) {
    const end = Math.min(count, made + IDLE_BATCH);
    const acks: Array<Promise<unknown>> = [];
    for (let i = made; i < end; i++) {
      acks.push(
        gateway.receive({ session: `${prefix}:${i}`, channel: "bench", text: `hello ${i}`, id: `m${i}` }),
      );
    }
    await Promise.all(acks);
    await settle(() => gateway.isBusy);
    made = end;
  }
  await settle(() => gateway.isBusy);
  return made;
}

async function benchIdleMemory(): Promise<Figures> {
  const gc = ensureGc();
  // Full collections until the heap stops shrinking: memory released through weak references and
  // finalizers (AbortSignals, stopped actors) takes more than one pass.
  const collect = () => {
    if (!gc) return;
    let previous = Number.POSITIVE_INFINITY;
    for (let pass = 0; pass < 8; pass++) {
      gc();
      const used = process.memoryUsage().heapUsed;
      if (pass >= 2 && used >= previous - 64 * 1024) break;
      previous = used;
    }
  };
  // Warm the code paths on a throwaway gateway, so compiled code is not counted as session memory.
  const warm = idleGateway(new MemoryStore(), { turnsEnded: 0 });
  await fillSessions(warm, "warm", IDLE_WARMUP, Number.POSITIVE_INFINITY);
  await warm.stop();

  const store = new MemoryStore();
  const counter = { turnsEnded: 0 };
  let gateway: Gateway | null = idleGateway(store, counter);
  await gateway.start();
  collect();
  const before = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const deadline = IDLE_BUDGET_MS > 0 ? t0 + IDLE_BUDGET_MS : Number.POSITIVE_INFINITY;
  const made = await fillSessions(gateway, "idle", IDLE_SESSIONS, deadline);
  const fillMs = performance.now() - t0;
  collect();
  const after = process.memoryUsage().heapUsed;

  const step = Math.max(1, Math.floor(made / 1000));
  let sampled = 0;
  let idle = 0;
  for (let i = 0; i < made; i += step, sampled++) {
    if (gateway.inspectSession(`idle:${i}`)?.state === "idle") idle++;
  }
  // Without the gateway only the store's transcripts stay: their share of the heap.
  const collected = new WeakRef(gateway);
  await gateway.stop();
  gateway = null;
  await settle();
  collect();
  const storeOnly = process.memoryUsage().heapUsed;
  const storedSessions = (await store.sessions()).length; // keeps `store` alive up to here
  const perSession = (after - before) / made;
  const storePerSession = collected.deref() === undefined ? (storeOnly - before) / made : Number.NaN;
  return {
    "idle.sessions": made < IDLE_SESSIONS ? `${made} of ${IDLE_SESSIONS} (fill budget reached)` : made,
    "idle.turnsEnded": counter.turnsEnded,
    "idle.sampledIdle": `${idle}/${sampled}`,
    "idle.storedTranscripts": storedSessions,
    "idle.fillSeconds": round(fillMs / 1000, 1),
    "idle.bytesPerSession": Math.round(perSession),
    "idle.bytesPerSession.target": "< 10240",
    "idle.bytesPerSession.memoryStore": Number.isNaN(storePerSession)
      ? "n/a (gateway not collected)"
      : Math.round(storePerSession),
    "idle.bytesPerSession.gatewayOnly": Number.isNaN(storePerSession)
      ? "n/a"
      : Math.round(perSession - storePerSession),
    "idle.heapMeasurement": gc ? "after gc()" : "approximate (no gc)",
  };
}

// ---------------------------------------------------------------------------------------------------
// calibration

const tinyMachine = setup({}).createMachine({ initial: "a", states: { a: { on: { go: "b" } }, b: {} } });

/** Best of 7 timed runs of `n` calls, after 2,000 untimed ones (JIT tiering), in µs per call. */
function microUs(fn: () => void, n: number): number {
  for (let i = 0; i < 2_000; i++) fn();
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < 7; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    best = Math.min(best, ((performance.now() - t0) * 1000) / n);
  }
  return round(best, 2);
}

function calibrate(): Figures {
  return {
    "calibration.xstateActorLifeUs": microUs(() => {
      const actor = createActor(tinyMachine);
      actor.start();
      actor.send({ type: "go" });
      actor.stop();
    }, 5_000),
    "calibration.abortControllerUs": microUs(() => {
      const controller = new AbortController();
      controller.signal.addEventListener("abort", () => {}, { once: true });
    }, 5_000),
    "calibration.loadavg1": round(loadavg()[0] ?? 0, 1),
  };
}

// ---------------------------------------------------------------------------------------------------

/** Runs (a), (b) and (c) and returns the figures; `<key>.target` entries hold the issue's targets. */
export async function benchGateway(): Promise<Figures> {
  const calibration = calibrate();
  const firstCall = await benchFirstCall();
  return {
    ...(await benchScenario()),
    ...firstCall,
    // The same figure in units of this machine's XState actor life, to compare across machines.
    "firstCall.liveSession.inActorLives": round(
      Number(firstCall["firstCall.liveSession.wallUs.median"]) /
        Number(calibration["calibration.xstateActorLifeUs"]),
      1,
    ),
    ...(await benchIdleMemory()),
    ...calibration,
  };
}

function printFigures(title: string, figures: Figures): void {
  const keys = Object.keys(figures).filter(
    (key) => !(key.endsWith(".target") && key.slice(0, -7) in figures),
  );
  const width = Math.max(...keys.map((key) => key.length));
  console.log(title);
  for (const key of keys) {
    const target = figures[`${key}.target`];
    console.log(
      `  ${key.padEnd(width)}  ${figures[key]}${target === undefined ? "" : `  (target ${target})`}`,
    );
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  ensureGc();
  printFigures("gateway", await benchGateway());
}
