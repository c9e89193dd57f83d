/**
 * Lane scheduler benchmarks (real timers, SystemClock default). Work is the process's CPU time (all its
 * threads, the garbage collector's included), not wall time: on a shared machine a wall-clock sample
 * mostly measures when the process was scheduled. Set-ups compared with each other take turns in
 * blocks (see `alternate`), so load from the rest of the machine falls on all of them alike.
 *
 * 1. 10,000 no-op async tasks round-robin over 100 session lanes nested in `main` (capacity 8): µs per
 *    task end to end, median of 7 blocks of 5 runs; the same tasks on bare per-session promise chains
 *    take turns with them, and the ratio is the scheduler's cost over the cheapest way to order the
 *    same tasks (target ≤ 8).
 * 2. Scaling: n entries queued on a paused lane (capacity 0), then released (capacity 8), for n = 10k,
 *    20k, 40k, 80k: µs per entry and the ratio work(2n) / work(n) (target ≤ 2.2). Every sample runs
 *    80k entries in all (8 backlogs of 10k, ..., 1 of 80k) and ends with full collections inside its
 *    measured time (`alternateCollected`): each sample pays for collecting the garbage it made, the
 *    old generation's included, rather than leaving it to a later sample (with only an unmeasured run
 *    between samples, a series ran with no full collection while the heap grew to 130 MB, and the one
 *    that came was charged to whichever sample it fell in). Median of 7. The same series on a floor
 *    (n bare promises held in an array, released by 8 workers: what any queue of n waiting callers
 *    costs V8) is measured alongside: a
 *    waiting backlog outgrows the young generation between 10k and 40k entries and the collector then
 *    copies and promotes every waiting caller, so the floor's own ratios show how much of the scaling
 *    is the engine's; `paused.<n>.overFloor` is what the scheduler adds per entry.
 * 3. Heap used per waiting entry (exact with `node --expose-gc`, approximate otherwise).
 * 4. With `TILLER_BENCH_OPENCLAW_DIR` set (see bench/peer-queue.ts): workload 1 on the seed system's
 *    own lane queue, taking turns with the scheduler in blocks; the ratio is how many times less CPU
 *    the scheduler takes (target ≥ 20).
 *
 * Run alone with `npx tsx --expose-gc bench/lanes.bench.ts`.
 */
import { pathToFileURL } from "node:url";
import { createLaneScheduler } from "../src/lanes/lane-scheduler.js";
import { alternate, alternateCollected, ensureGc, round } from "./bench-support.js";
import { loadPeerQueue } from "./peer-queue.js";

const TASKS = 10_000;
const SESSIONS = 100;
const ROUNDS = 7;
const RUNS_PER_BLOCK = 5;
const SCALING = [10_000, 20_000, 40_000, 80_000] as const;
/** Entries per scaling sample, whatever the backlog size. */
const SCALING_TOTAL = 80_000;
const SCALING_ROUNDS = 7;

const gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc;
const sessionKeys = Array.from({ length: SESSIONS }, (_, i) => `s${i}`);
const noop = async (): Promise<number> => 1;

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

/** The floor of the same workload: n callers' promises held in an array, then settled by 8 workers. */
async function pausedFloor(n: number): Promise<void> {
  const calls = new Array<Promise<number>>(n);
  const settlers = new Array<(value: number) => void>(n);
  for (let i = 0; i < n; i++) calls[i] = new Promise<number>((resolve) => (settlers[i] = resolve));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      settlers[i]!(await noop());
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await Promise.all(calls);
}

/** `SCALING_TOTAL` entries in backlogs of n. */
const backlogs = (workload: (n: number) => Promise<void>, n: number) => async (): Promise<void> => {
  for (let done = 0; done < SCALING_TOTAL; done += n) await workload(n);
};

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
  const [lanesMs, bareMs] = await alternate([sessionRoundRobin, barePromiseChains], ROUNDS, RUNS_PER_BLOCK);
  const figures: Record<string, number | string> = {
    "roundRobin.usPerTask": round((lanesMs! * 1000) / TASKS),
    "barePromiseChain.usPerTask": round((bareMs! * 1000) / TASKS),
    // Both measured in this run: the scheduler's cost over the cheapest way to order the same tasks.
    "roundRobin.timesBareChain": round(lanesMs! / bareMs!, 1),
    "roundRobin.timesBareChain.target": "<= 8",
  };
  const sizes = SCALING.flatMap((n) => [backlogs(pausedThenReleased, n), backlogs(pausedFloor, n)]);
  const collect = ensureGc();
  const medians = collect
    ? await alternateCollected(sizes, SCALING_ROUNDS, collect)
    : await alternate(sizes, SCALING_ROUNDS, 1);
  // Per entry, in µs: [scheduler, floor] for each size.
  const perEntry = SCALING.map((_, k) =>
    [medians[2 * k]!, medians[2 * k + 1]!].map((ms) => (ms * 1000) / SCALING_TOTAL),
  );
  for (const [k, n] of SCALING.entries()) {
    const [lanes, floor] = perEntry[k]!;
    figures[`paused.${n / 1000}k.usPerEntry`] = round(lanes!);
    figures[`paused.${n / 1000}k.floor.usPerEntry`] = round(floor!);
    figures[`paused.${n / 1000}k.overFloor.usPerEntry`] = round(lanes! - floor!);
    if (k === 0) continue;
    const [lanesBefore, floorBefore] = perEntry[k - 1]!;
    const step = `${n / 1000}k/${n / 2000}k`;
    // work(2n) / work(n): twice the per-entry ratio.
    figures[`paused.ratio.${step}`] = round((2 * lanes!) / lanesBefore!);
    figures[`paused.ratio.${step}.target`] = "<= 2.2";
    figures[`paused.floor.ratio.${step}`] = round((2 * floor!) / floorBefore!);
  }
  figures["paused.measurement"] = collect ? "each sample collects its own garbage" : "approximate (no gc())";
  figures["heap.bytesPerWaitingEntry"] = Math.round(await heapPerWaitingEntry());
  figures["heap.measurement"] = gc ? "after gc()" : "approximate (run with --expose-gc)";
  const peer = await loadPeerQueue();
  if (typeof peer === "string") {
    figures["roundRobin.timesFasterThanOpenClaw"] = peer;
  } else {
    const peerRun = () => peer.run(TASKS, sessionKeys);
    const [oursMs, peerMs] = await alternate([sessionRoundRobin, peerRun], ROUNDS, RUNS_PER_BLOCK);
    figures["openclaw.version"] = peer.version;
    figures["openclaw.roundRobin.usPerTask"] = round((peerMs! * 1000) / TASKS);
    figures["roundRobin.timesFasterThanOpenClaw"] = round(peerMs! / oursMs!, 1);
    figures["roundRobin.timesFasterThanOpenClaw.target"] = ">= 20";
  }
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
