/**
 * Triggered-work benchmarks (simulated clock, so the figures are the runtime's own cost and its
 * scheduling decisions, not timer jitter):
 *
 * 1. Starvation: `main` at full capacity (4 slots) under sustained foreground load: a standing backlog of
 *    20 foreground entries, refilled as fast as the slots drain it, so the foreground queue is never
 *    empty; a background entry every second. The longest wait of a background entry against
 *    `laneAgingMs` (1000 ms here): bounded with aging (two levels, then the backlog that arrived before
 *    it); with aging off, how many background entries never started (the peer: strict priorities).
 *    Above capacity (arrivals faster than the slots) every queue grows without bound, foreground too.
 * 2. Schedule ticks: n `everyMs` schedules with staggered slots (about one due per tick), run through
 *    the gateway's ScheduleRunner over a memory store: wall µs per fired slot at n = 1,000 and 10,000
 *    and their ratio (flat, target ≤ 2: a heap, not a scan).
 *
 * Run alone with `npx tsx bench/triggers.bench.ts`.
 */
import { pathToFileURL } from "node:url";
import { MemoryStore } from "../src/adapters/memory-store.js";
import { SimulatedClock } from "../src/adapters/simulated-clock.js";
import type { TriggerAck } from "../src/gateway/inbound/trigger.js";
import { ScheduleRunner } from "../src/gateway/schedules/schedule-runner.js";
import { createLaneScheduler } from "../src/lanes/lane-scheduler.js";
import { silentLogger } from "../src/logger.js";
import { round } from "./bench-support.js";

const AGING_MS = 1000;
const SERVICE_MS = 100;
const CAPACITY = 4;
const HORIZON_MS = 30_000;

async function starvation(
  agingMs: number,
): Promise<{ longestMs: number; neverStarted: number; ran: number }> {
  const clock = new SimulatedClock();
  const lanes = createLaneScheduler({ capacity: { main: CAPACITY }, agingMs, clock });
  const waits: number[] = [];
  let backgroundSubmitted = 0;
  const work = () => new Promise<void>((resolve) => clock.setTimeout(resolve, SERVICE_MS));
  const done: Promise<unknown>[] = [];
  const foreground = () => done.push(lanes.run({ priority: "foreground" }, work).catch(() => undefined));
  for (let i = 0; i < 5 * CAPACITY; i++) foreground();
  for (let t = 0; t < HORIZON_MS; t += 10) {
    // Exactly the service rate: CAPACITY entries per SERVICE_MS, so the backlog stands.
    if (t % SERVICE_MS === 0) for (let i = 0; i < CAPACITY; i++) foreground();
    if (t % 1000 === 0) {
      backgroundSubmitted++;
      const at = clock.now();
      done.push(
        lanes
          .run({ priority: "background" }, () => {
            waits.push(clock.now() - at);
            return work();
          })
          .catch(() => undefined),
      );
    }
    await clock.advance(10);
  }
  lanes.clear("main");
  // Entries still waiting at the horizon waited at least this long.
  return {
    longestMs: waits.length > 0 ? Math.max(...waits) : HORIZON_MS,
    neverStarted: backgroundSubmitted - waits.length,
    ran: waits.length,
  };
}

async function scheduleTicks(n: number): Promise<number> {
  const clock = new SimulatedClock();
  const store = new MemoryStore({ now: () => clock.now() });
  const everyMs = n * 10;
  // Staggered: schedule i first falls due at i·10 ms after its own creation slot.
  const schedules = Array.from({ length: n }, (_, i) => ({
    id: `s${i}`,
    session: `s${i % 100}`,
    text: "tick",
    everyMs: everyMs + i,
    catchUp: true,
  }));
  let fired = 0;
  const ack = (session: string, id: string): TriggerAck => ({
    session,
    messageId: id,
    trigger: "cron",
    lane: "cron",
    priority: "background",
    disposition: "started",
    mode: "followup",
    modeSource: "default",
    text: "",
  });
  const runner = new ScheduleRunner({
    schedules,
    clock,
    store,
    logger: silentLogger,
    trigger: async (request) => {
      fired++;
      return ack(request.session, request.id ?? "");
    },
    emit: () => {},
  });
  await runner.start();
  // Skip to the first slot, then time a window in which about 2,000 slots fall due.
  await clock.advance(everyMs);
  const before = fired;
  const t0 = performance.now();
  for (let step = 0; step < 2000; step++) await clock.advance(1);
  const ms = performance.now() - t0;
  runner.stop();
  return (ms * 1000) / Math.max(1, fired - before);
}

export async function benchTriggers(): Promise<Record<string, number | string>> {
  const aged = await starvation(AGING_MS);
  const strict = await starvation(0);
  await scheduleTicks(1000); // warm-up
  const small = await scheduleTicks(1000);
  const large = await scheduleTicks(10_000);
  return {
    "starvation.laneAgingMs": AGING_MS,
    "starvation.aging.longestBackgroundWaitMs": aged.longestMs,
    "starvation.aging.ratioToAgingMs": round(aged.longestMs / AGING_MS),
    "starvation.aging.ratioToAgingMs.target": "<= 3",
    // Entries submitted less than two aging periods before the horizon may still be waiting.
    "starvation.aging.stillWaitingAtHorizon": aged.neverStarted,
    "starvation.noAging.backgroundStarted": strict.ran,
    "starvation.noAging.backgroundNeverStarted": strict.neverStarted,
    "schedules.1k.usPerFiredSlot": round(small),
    "schedules.10k.usPerFiredSlot": round(large),
    "schedules.ratio.10k/1k": round(large / small),
    "schedules.ratio.10k/1k.target": "<= 2",
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await benchTriggers();
  const width = Math.max(...Object.keys(figures).map((key) => key.length));
  console.log("triggers");
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key.padEnd(width)}  ${value}`);
}
