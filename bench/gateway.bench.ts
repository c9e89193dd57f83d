/**
 * Gateway benchmarks: the whole runtime (gateway, session and run machines, lanes, in-memory store).
 *
 * (a) A 1,000-message scenario over 100 sessions, built in code and played by `runScenario` on the
 *     simulated clock: messages spread over ~20 s of simulated time, a third asking for a tool, many
 *     arriving while a turn runs (so they steer), a scripted model with delays. Wall time of the first
 *     run in the process and the median of warm runs (target < 1 s). The one-time cost of the first
 *     config parse (the regex safety check of the complaint patterns) is reported apart.
 * (b) receive → first model call (bench/first-call.ts): a zero-latency model records `performance.now()` when `complete()` is
 *     entered; timed from just before `gateway.receive()` on the system clock, each turn left to finish
 *     before the next message. Messages to live sessions (recently active: actor and window in memory),
 *     first messages of new sessions, and live sessions with growing windows. Median and p95 in µs
 *     (target median < 50 µs), with the process CPU time over the same window. Next to it, the floor:
 *     the bare actor chain of docs/architecture.md (session → lane slot → run → model call) with trivial
 *     machines, measured the same way (bench/actor-chain-floor.ts), and how far Tiller is above it.
 * (c) Heap per idle session (bench/idle-memory.ts): up to 100,000 sessions, one message each, the model answering at once;
 *     once all are idle, (heapUsed after − before) / sessions after gc() (target ≤ 2 KB), split into
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
import { createActor, setup } from "xstate";
import { parseConfig } from "../src/config.js";
import { parseScenario } from "../src/scenario/load.js";
import { runScenario } from "../src/scenario/runner.js";
import type { Scenario } from "../src/scenario/schema.js";
import { cpuMicros, ensureGc, type Figures, median, round } from "./bench-support.js";
import { benchFirstCall } from "./first-call.js";
import { benchIdleMemory } from "./idle-memory.js";

const SCENARIO_SESSIONS = 100;
const SCENARIO_MESSAGES_PER_SESSION = 10;
const SCENARIO_WARM_RUNS = 3;

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
