/**
 * Lane scheduler throughput with capacity groups configured against without, in one run (real timers):
 * n no-op async tasks round-robin over 100 sessions and three lanes (`main` 8, `cron` 4, `subagent` 4),
 * all enqueued at once; with groups, `cron` and `subagent` share a budget of 6. µs of CPU time per task
 * end to end for n = 10k, 40k and 160k, and the ratio grouped / ungrouped (target ≤ 1.10). The two
 * set-ups take turns in blocks (bench-support's `alternate`: one unmeasured run, then measured ones);
 * each block measures at least 40k tasks (4 runs of 10k, 1 of 40k or 160k); median of 5 blocks (3 at
 * 160k, to keep the bench under a minute on a loaded machine).
 *
 * Run alone with `npx tsx bench/lane-groups.bench.ts`.
 */
import { pathToFileURL } from "node:url";
import { createLaneScheduler, type LaneSchedulerOptions } from "../src/lanes/lane-scheduler.js";
import { alternate, round } from "./bench-support.js";

/** Each n and its number of blocks: a 160k block costs four of the others, and varies less. */
const SIZES = [
  [10_000, 5],
  [40_000, 5],
  [160_000, 3],
] as const;
/** Tasks measured per block at least, whatever n. */
const PER_BLOCK_TASKS = 40_000;
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

export async function benchLaneGroups(
  create: CreateLanes = createLaneScheduler,
): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = {};
  for (const [n, rounds] of SIZES) {
    const perBlock = Math.max(1, Math.round(PER_BLOCK_TASKS / n));
    const [plain, grouped] = await alternate(
      [() => workload(create, n, false), () => workload(create, n, true)],
      rounds,
      perBlock,
    );
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
