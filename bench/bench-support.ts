/** Helpers the gateway benches share: figures, statistics, gc(), CPU time and a channel that keeps nothing. */

import { readFile } from "node:fs/promises";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pg from "pg";
import type { Channel, DeliveryReceipt } from "../src/ports/channel.js";

export type Figures = Record<string, number | string>;

export function envNumber(name: string, fallback: number): number {
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

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

/** CPU time of the whole process (all threads), in µs. */
export function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/**
 * Median CPU time in ms of one run of each of `setups`. The set-ups take turns in blocks of one unmeasured
 * run (it pays for the garbage the previous block left) and `perBlock` measured ones; a block's figure is
 * its mean, the result the median over `rounds` blocks. A run that allocates about as much as the young
 * generation holds would, in turns of single runs, hand its garbage to the next set-up.
 */
export async function alternate(
  setups: Array<() => Promise<void>>,
  rounds: number,
  perBlock: number,
): Promise<number[]> {
  const times = setups.map(() => [] as number[]);
  for (let block = 0; block < rounds; block++) {
    for (const [k, once] of setups.entries()) {
      // No gc() here: a forced full collection shrinks the young generation and slows the next run.
      await once();
      const c0 = cpuMicros();
      for (let i = 0; i < perBlock; i++) await once();
      times[k]!.push((cpuMicros() - c0) / 1000 / perBlock);
    }
  }
  return times.map(median);
}

/**
 * Median CPU time in ms of one run of each of `setups`, each charged for collecting its own garbage. The
 * set-ups take turns: an unmeasured run (it warms up and sizes the young generation), then a measured
 * one; every run ends with two full collections (the second completes the sweeping the first left), and
 * for the measured run they are inside the measured time. The same two collections on a clean heap are
 * measured every round and subtracted. For runs whose waiting objects get promoted this is the sound
 * way to take turns: otherwise the old-generation garbage of one run is marked and swept in whichever
 * later run the collector picks (a heap of 130 MB built up over a series with no full collection).
 */
export async function alternateCollected(
  setups: Array<() => Promise<void>>,
  rounds: number,
  gc: () => void,
): Promise<number[]> {
  const times = setups.map(() => [] as number[]);
  const collections: number[] = [];
  const collect = (): void => {
    gc();
    gc();
  };
  for (let round = 0; round < rounds; round++) {
    let c0 = cpuMicros();
    collect();
    collections.push((cpuMicros() - c0) / 1000);
    for (const [k, once] of setups.entries()) {
      await once();
      collect();
      c0 = cpuMicros();
      await once();
      collect();
      times[k]!.push((cpuMicros() - c0) / 1000);
    }
  }
  const base = median(collections);
  return times.map((samples) => median(samples) - base);
}

/** A channel that commits every send and keeps nothing, so the bench holds no per-session data. */
export class NullChannel implements Channel {
  private counter = 0;
  async send(): Promise<DeliveryReceipt> {
    return { messageId: `out-${++this.counter}` };
  }
}

/**
 * The PostgreSQL a bench uses (`TILLER_DATABASE_URL`, else `TILLER_TEST_DATABASE_URL`, else the local
 * server) and a connected admin client; or, when none answers within a second, why the bench skips.
 */
export async function benchDatabase(): Promise<{ url: string; admin: pg.Client } | { skipped: string }> {
  const url =
    process.env.TILLER_DATABASE_URL ??
    process.env.TILLER_TEST_DATABASE_URL ??
    "postgres://postgres@127.0.0.1:5432/test";
  const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  admin.on("error", () => {});
  try {
    await admin.connect();
  } catch {
    return { skipped: `no PostgreSQL answered at ${new URL(url).host} (set TILLER_DATABASE_URL)` };
  }
  return { url, admin };
}

/**
 * CPU time (ms) used so far by each PostgreSQL backend whose `application_name` matches `pattern`
 * (LIKE), by pid: read from /proc, so only for a server on this machine (empty elsewhere).
 */
export async function backendCpuMs(admin: pg.Client, pattern: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1",
    [pattern],
  );
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime and stime (fields 14 and 15 of the file), in clock ticks of 10 ms.
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // Not on this machine, or already gone.
    }
  }
  return cpu;
}

/** CPU (ms) the backends used between two readings (a backend new since the first counts whole). */
export function cpuSince(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}
