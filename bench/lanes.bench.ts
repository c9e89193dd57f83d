/**
 * Lane scheduler benchmarks (real timers, SystemClock default):
 *
 * 1. 10,000 no-op async tasks round-robin over 100 session lanes nested in `main` (capacity 8): µs per
 *    task end to end, median of 7 runs after warm-up; the same tasks on bare per-session promise
 *    chains for reference.
 * 2. Scaling: n entries queued on a paused lane (capacity 0), then released (capacity 8): µs per entry
 *    for n = 10k, 20k, 40k, 80k and the ratio cost(2n) / cost(n) (target ≤ 2.2, i.e. linear).
 * 3. Heap used per waiting entry (exact with `node --expose-gc`, approximate otherwise).
 *
 * Run alone with `npx tsx --expose-gc bench/lanes.bench.ts`.
 */
import { pathToFileURL } from "node:url";
import { createLaneScheduler } from "../src/lanes/lane-scheduler.js";
import { median, round } from "./bench-support.js";

const TASKS = 10_000;
const SESSIONS = 100;
const RUNS = 7;
const WARMUP = 3;
const SCALING = [10_000, 20_000, 40_000, 80_000] as const;

const gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc;
const sessionKeys = Array.from({ length: SESSIONS }, (_, i) => `s${i}`);
const noop = async (): Promise<number> => 1;

/** Median over RUNS measured runs (after WARMUP unmeasured ones) of `once()`, in ms. */
async function measure(once: () => Promise<void>, runs = RUNS, warmup = WARMUP): Promise<number> {
  for (let i = 0; i < warmup; i++) await once();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    // No gc() here: a forced full collection shrinks the young generation and slows the next run.
    const t0 = performance.now();
    await once();
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function sessionRoundRobin(): Promise<void> {
  const lanes = createLaneScheduler({ capacity: { main: 8 } });
  const calls = new Array<Promise<number>>(TASKS);
  for (let i = 0; i < TASKS; i++) calls[i] = lanes.run({ session: sessionKeys[i % SESSIONS]! }, noop);
  await Promise.all(calls);
}

/** The reference: one promise chain per session, no lanes, no capacity, no bookkeeping. */
async function barePromiseChains(): Promise<void> {
  const chains = new Array<Promise<unknown>>(SESSIONS).fill(Promise.resolve());
  const calls = new Array<Promise<number>>(TASKS);
  for (let i = 0; i < TASKS; i++) {
    const call = chains[i % SESSIONS]!.then(noop);
    chains[i % SESSIONS] = call;
    calls[i] = call;
  }
  await Promise.all(calls);
}

async function pausedThenReleased(n: number): Promise<void> {
  const lanes = createLaneScheduler({ capacity: { main: 0 } });
  const calls = new Array<Promise<number>>(n);
  for (let i = 0; i < n; i++) calls[i] = lanes.run({}, noop);
  lanes.setCapacity("main", 8);
  await Promise.all(calls);
}

/** Bytes of heap per entry waiting on a paused lane (the caller's promise and the task included). */
async function heapPerWaitingEntry(n = 50_000): Promise<number> {
  const lanes = createLaneScheduler({ capacity: { main: 0 } });
  const task = async (): Promise<number> => 1;
  const calls = new Array<Promise<number>>(n);
  gc?.();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) calls[i] = lanes.run({ session: sessionKeys[i % SESSIONS]! }, task);
  gc?.();
  const after = process.memoryUsage().heapUsed;
  lanes.setCapacity("main", 8);
  await Promise.all(calls);
  return (after - before) / n;
}

export async function benchLanes(): Promise<Record<string, number | string>> {
  const lanesMs = await measure(sessionRoundRobin);
  const bareMs = await measure(barePromiseChains);
  const figures: Record<string, number | string> = {
    "roundRobin.usPerTask": round((lanesMs * 1000) / TASKS),
    "barePromiseChain.usPerTask": round((bareMs * 1000) / TASKS),
    // Both measured in this run: the scheduler's cost over the cheapest way to order the same tasks.
    "roundRobin.timesBareChain": round(lanesMs / bareMs, 1),
    "roundRobin.timesBareChain.target": "<= 8",
  };
  let previous: number | undefined;
  for (const n of SCALING) {
    const ms = await measure(() => pausedThenReleased(n), RUNS, 2);
    figures[`paused.${n / 1000}k.usPerEntry`] = round((ms * 1000) / n);
    if (previous !== undefined) {
      figures[`paused.ratio.${n / 1000}k/${n / 2000}k`] = round(ms / previous);
      figures[`paused.ratio.${n / 1000}k/${n / 2000}k.target`] = "<= 2.2";
    }
    previous = ms;
  }
  figures["heap.bytesPerWaitingEntry"] = Math.round(await heapPerWaitingEntry());
  figures["heap.measurement"] = gc ? "after gc()" : "approximate (run with --expose-gc)";
  return figures;
}

function printTable(figures: Record<string, number | string>): void {
  const width = Math.max(...Object.keys(figures).map((key) => key.length));
  console.log("lane scheduler");
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key.padEnd(width)}  ${value}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printTable(await benchLanes());
}
