/**
 * JSONL store figures: durable appends per second under group commit (100 sessions writing at once),
 * fsyncs per record, and the cost of a restart (new store, first open, readWindow) on a 100k-record
 * transcript. Run alone with `npx tsx bench/store.bench.ts`.
 */
import { execFile } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { JsonlStore } from "../src/adapters/jsonl/jsonl-store.js";
import { decodeIndex } from "../src/adapters/jsonl/transcript-index.js";
import { sessionFileName } from "../src/ports/session-key.js";
import type { RecordBody } from "../src/ports/store.js";
import { round } from "./bench-support.js";

const run = promisify(execFile);

const SESSIONS = 100;
const PER_SESSION = 200;
const BIG_TRANSCRIPT = 100_000;
const REOPEN_RUNS = 7;

const message = (n: number): RecordBody => ({
  role: "user",
  text: `message ${n}: can you check the deploy logs and tell me why the last build failed?`,
  messageId: `m${n}`,
});

/**
 * Measures the store and returns the figures (also printed when this file runs alone).
 *
 * @example
 * ```ts
 * const figures = await benchStore();
 * console.log(figures["append.sessionLoops.recordsPerSecond"]);
 * ```
 */
export async function benchStore(): Promise<Record<string, number | string>> {
  const root = await mkdtemp(join(tmpdir(), "tiller-bench-store-"));
  try {
    return {
      ...(await benchSessionLoops(join(root, "loops"))),
      ...(await benchBurst(join(root, "burst"))),
      ...(await benchReopen(join(root, "reopen"))),
    };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** Each of 100 sessions awaits its own appends one by one, as a session actor does; all run at once. */
async function benchSessionLoops(dir: string): Promise<Record<string, number>> {
  const store = await JsonlStore.openDir({ dir });
  const keys = Array.from({ length: SESSIONS }, (_, i) => `telegram:${i}`);
  const heads = await Promise.all(keys.map((key) => store.open(key)));
  const before = store.stats();
  const started = performance.now();
  await Promise.all(
    keys.map(async (key, i) => {
      for (let n = 0; n < PER_SESSION; n++) await store.append(key, [message(n)], heads[i]!);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = store.stats();
  await store.close();
  const records = after.records - before.records;
  return {
    "append.sessionLoops.records": records,
    "append.sessionLoops.recordsPerSecond": Math.round(records / seconds),
    "append.sessionLoops.fsyncsPerRecord": round((after.fsyncs - before.fsyncs) / records, 3),
  };
}

/** The same 20k appends issued all at once (a burst of inbound traffic): batches grow, fsyncs shrink. */
async function benchBurst(dir: string): Promise<Record<string, number>> {
  const store = await JsonlStore.openDir({ dir });
  const keys = Array.from({ length: SESSIONS }, (_, i) => `slack:${i}`);
  const heads = await Promise.all(keys.map((key) => store.open(key)));
  const before = store.stats();
  const started = performance.now();
  const appends: Promise<unknown>[] = [];
  for (let n = 0; n < PER_SESSION; n++) {
    for (const [i, key] of keys.entries()) appends.push(store.append(key, [message(n)], heads[i]!));
  }
  await Promise.all(appends);
  const seconds = (performance.now() - started) / 1000;
  const after = store.stats();
  await store.close();
  const records = after.records - before.records;
  return {
    "append.burst.recordsPerSecond": Math.round(records / seconds),
    "append.burst.fsyncsPerRecord": round((after.fsyncs - before.fsyncs) / records, 3),
  };
}

/**
 * A 100k-record transcript: time a restart plus readWindow of all 100k records (no rotation: the worst
 * case), a cached read(), and a restart once the transcript was rotated. A restart is a new process, so
 * the headline figure is measured in fresh processes (REOPEN_RUNS of them: median, min and max); the
 * same reopen inside this process, whose heap is full of the earlier benches, is reported beside it.
 * The headline restart follows a clean stop, whose close() indexed the transcript; restarts after a
 * kill -9 at the end of the writing (the index the store kept while the transcript grew lags) and with
 * no index at all (a full scan) are measured too. Each is reported as wall time and as CPU time: on a
 * machine that other work loads, wall time is mostly waiting for a core (a reopen is one thread), and
 * the CPU time is what the reopen would take on a quiet one; `wallPerCpu` says how loaded this run was.
 */
async function benchReopen(dir: string): Promise<Record<string, number | string>> {
  const key = "telegram:long-running";
  const writer = await JsonlStore.openDir({ dir });
  const head = await writer.open(key);
  for (let n = 0; n < BIG_TRANSCRIPT; n += 1000) {
    await writer.append(
      key,
      Array.from({ length: 1000 }, (_, i) => message(n + i)),
      head,
    );
  }
  const file = join(dir, `${sessionFileName(key)}.jsonl`);
  // What a kill -9 right now would leave: the index the store wrote while the transcript grew.
  while (writer.isBusy()) await new Promise((resolve) => setImmediate(resolve));
  await copyFile(`${file}.index`, `${file}.index.at-crash`);
  const closeStarted = performance.now();
  await writer.close(); // indexes the rest of the transcript
  const closeMs = performance.now() - closeStarted;
  const { size } = await stat(file);

  // The plain parse of the same file takes turns with the reopens, so both medians share the machine's load.
  const floors: Array<{ ms: number; cpuMs: number }> = [];
  const fresh = await reopensInChildren(dir, key, async () => {
    floors.push(await inChild("parse-floor-child", [file]));
  });
  const middle = fresh[fresh.length >> 1]!;
  // After a kill -9 at the end of the writing: the index lags (each load indexes the rest: put back).
  const { covered } = decodeIndex(await readFile(`${file}.index.at-crash`), key) ?? { covered: 0 };
  const crashed = await reopensInChildren(dir, key, () =>
    copyFile(`${file}.index.at-crash`, `${file}.index`),
  );
  // With no index at all (a transcript from before indexes, or its index lost): every line is scanned.
  const scanned = await reopensInChildren(dir, key, () => rm(`${file}.index`, { force: true }));

  (globalThis as { gc?: () => void }).gc?.(); // run-all exposes gc(): start from a clean heap
  const started = performance.now();
  const store = await JsonlStore.openDir({ dir });
  await store.open(key);
  const window = await store.readWindow(key);
  const reopenMs = performance.now() - started;
  const readStarted = performance.now();
  const all = await store.read(key);
  const readMs = performance.now() - readStarted;
  if (window.length !== BIG_TRANSCRIPT || all.length !== BIG_TRANSCRIPT)
    throw new Error("bench: records missing");

  // The usual shape of a long transcript: compacted, so the window after the last rotation is short.
  const current = await store.open(key);
  await store.rotate(key, current);
  await store.append(
    key,
    Array.from({ length: 100 }, (_, i) => message(BIG_TRANSCRIPT + i)),
    current,
  );
  await store.close();
  const rotatedStarted = performance.now();
  const rotatedCpu = process.cpuUsage();
  const rotated = await JsonlStore.openDir({ dir });
  await rotated.open(key);
  const shortWindow = await rotated.readWindow(key);
  const rotatedMs = performance.now() - rotatedStarted;
  const rotatedCpuMs = cpuMsSince(rotatedCpu);
  await rotated.close();
  if (shortWindow.length !== 100) throw new Error("bench: rotated window has the wrong size");
  return {
    "reopen.records": BIG_TRANSCRIPT,
    "reopen.fileMB": round(size / 1e6, 3),
    "reopen.freshProcesses": fresh.length,
    "reopen.openAndReadWindowMs.median": Math.round(middle.ms),
    "reopen.openAndReadWindowMs.median.target": "<= 500",
    "reopen.openAndReadWindowMs.min": Math.round(fresh[0]!.ms),
    "reopen.openAndReadWindowMs.max": Math.round(fresh.at(-1)!.ms),
    // CPU time is the figure to compare on a shared machine, where wall time includes waiting for a core.
    "reopen.openAndReadWindowCpuMs.median": Math.round(median(fresh, "cpuMs")),
    "reopen.openAndReadWindowCpuMs.median.target": "<= 500",
    "reopen.wallPerCpu.median": round(median(fresh, "ms") / median(fresh, "cpuMs"), 2),
    // The floor: the same file read and parsed by one JSON.parse in a fresh process, in the same stretch.
    "reopen.parseFloor.cpuMs.median": Math.round(median(floors, "cpuMs")),
    "reopen.timesParseFloor": round(median(fresh, "cpuMs") / median(floors, "cpuMs"), 2),
    "reopen.afterCrash.unindexedMB": round((size - covered) / 1e6, 3),
    "reopen.afterCrash.openAndReadWindowMs.median": Math.round(crashed[crashed.length >> 1]!.ms),
    "reopen.afterCrash.openAndReadWindowMs.median.target": "<= 500",
    "reopen.afterCrash.openAndReadWindowMs.max": Math.round(crashed.at(-1)!.ms),
    "reopen.afterCrash.openAndReadWindowCpuMs.median": Math.round(median(crashed, "cpuMs")),
    "reopen.afterCrash.openAndReadWindowCpuMs.median.target": "<= 500",
    "reopen.noIndex.openAndReadWindowMs.median": Math.round(scanned[scanned.length >> 1]!.ms),
    "reopen.noIndex.openAndReadWindowMs.min": Math.round(scanned[0]!.ms),
    "reopen.noIndex.openAndReadWindowMs.max": Math.round(scanned.at(-1)!.ms),
    "reopen.noIndex.openAndReadWindowCpuMs.median": Math.round(median(scanned, "cpuMs")),
    "reopen.writerCloseWithIndexMs": Math.round(closeMs),
    "reopen.sameProcessMs": Math.round(reopenMs),
    "reopen.cachedReadMs": Math.round(readMs),
    "reopen.rotated.openAndReadWindowMs": Math.round(rotatedMs),
    "reopen.rotated.openAndReadWindowMs.target": "<= 500",
    "reopen.rotated.openAndReadWindowCpuMs": Math.round(rotatedCpuMs),
  };
}

/** The median of one figure of the runs (each figure has its own order). */
function median(runs: ReadonlyArray<{ ms: number; cpuMs: number }>, figure: "ms" | "cpuMs"): number {
  return runs.map((run) => run[figure]).sort((a, b) => a - b)[runs.length >> 1]!;
}

function cpuMsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

/** REOPEN_RUNS reopens in fresh processes, each after `before`, fastest first. */
async function reopensInChildren(
  dir: string,
  key: string,
  before: () => Promise<void>,
): Promise<Array<{ ms: number; cpuMs: number }>> {
  const runs: Array<{ ms: number; cpuMs: number }> = [];
  for (let run = 0; run < REOPEN_RUNS; run++) {
    await before();
    runs.push(await reopenInChild(dir, key));
  }
  return runs.sort((a, b) => a.ms - b.ms);
}

/**
 * One reopen in a new node process, running the same build as this bench (compiled, or TypeScript under
 * tsx); the child times only the reopen.
 */
async function reopenInChild(dir: string, key: string): Promise<{ ms: number; cpuMs: number }> {
  return inChild("reopen-child", [dir, key]);
}

/** Runs bench/NAME with `args` in a new node process and returns what it printed last. */
async function inChild(name: string, args: string[]): Promise<{ ms: number; cpuMs: number }> {
  const compiled = import.meta.url.endsWith(".js");
  const child = fileURLToPath(new URL(`./${name}.${compiled ? "js" : "ts"}`, import.meta.url));
  const { stdout } = await run(
    process.execPath,
    compiled ? [child, ...args] : ["--import", "tsx", child, ...args],
  );
  const result = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
    ms: number;
    cpuMs: number;
    records: number;
  };
  if (result.records !== BIG_TRANSCRIPT) throw new Error(`bench: child read ${result.records} records`);
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchStore());
}
