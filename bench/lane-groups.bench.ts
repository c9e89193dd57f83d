/**
 * Lane scheduler throughput with capacity groups configured against without, in one run (real timers):
 * n no-op async tasks round-robin over 100 sessions and three lanes (`main` 8, `cron` 4, `subagent` 4),
 * all enqueued at once; with groups, `cron` and `subagent` share a budget of 6. µs per task end to end
 * for n = 10k, 40k and 160k (median of 5 runs after warm-up, the two set-ups alternating so load on the
 * machine hits both alike), and the ratio grouped / ungrouped (target ≤ 1.10).
 *
 * Run alone with `npx tsx bench/lane-groups.bench.ts`.
 */
import { pathToFileURL } from "node:url";
import { createLaneScheduler, type LaneSchedulerOptions } from "../src/lanes/lane-scheduler.js";
import { median, round } from "./bench-support.js";

const SIZES = [10_000, 40_000, 160_000] as const;
const SESSIONS = 100;
const LANES = ["main", "cron", "subagent"] as const;
const CAPACITY = { main: 8, cron: 4, subagent: 4 };
const GROUPS = { background: { capacity: 6, lanes: ["cron", "subagent"] } };

const sessionKeys = Array.from({ length: SESSIONS }, (_, i) => `s${i}`);
const noop = async (): Promise<number> => 1;

/** Anything shaped like `createLaneScheduler` (the comparison against another build passes its own). */
export type CreateLanes = (options: LaneSchedulerOptions) => {
  run(options: { session?: string; lane?: string }, task: () => Promise<number>): Promise<number>;
};

/** Runs n tasks over the sessions and lanes; resolves when all ended. */
export async function workload(create: CreateLanes, n: number, grouped: boolean): Promise<void> {
  const lanes = create(grouped ? { capacity: CAPACITY, groups: GROUPS } : { capacity: CAPACITY });
  const calls = new Array<Promise<number>>(n);
  for (let i = 0; i < n; i++) {
    calls[i] = lanes.run({ session: sessionKeys[i % SESSIONS]!, lane: LANES[i % LANES.length]! }, noop);
  }
  await Promise.all(calls);
}

/** Median ms of each of `setups`, run alternately `runs` times after one warm-up round. */
export async function alternate(setups: Array<() => Promise<void>>, runs = 5): Promise<number[]> {
  for (const once of setups) await once();
  const times = setups.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) {
    for (const [k, once] of setups.entries()) {
      const t0 = performance.now();
      await once();
      times[k]!.push(performance.now() - t0);
    }
  }
  return times.map(median);
}

export async function benchLaneGroups(
  create: CreateLanes = createLaneScheduler,
): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = {};
  for (const n of SIZES) {
    const [plain, grouped] = await alternate([
      () => workload(create, n, false),
      () => workload(create, n, true),
    ]);
    const k = `${n / 1000}k`;
    figures[`ungrouped.${k}.usPerTask`] = round((plain! * 1000) / n);
    figures[`grouped.${k}.usPerTask`] = round((grouped! * 1000) / n);
    figures[`ratio.${k}.grouped/ungrouped`] = round(grouped! / plain!);
    figures[`ratio.${k}.grouped/ungrouped.target`] = "<= 1.10";
  }
  return figures;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await benchLaneGroups();
  console.log("lane scheduler: capacity groups");
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key.padEnd(36)}  ${value}`);
}
