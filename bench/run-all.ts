/**
 * Runs every benchmark module that exists (`npm run bench`) and prints one table of figures per module.
 * `npm run bench` compiles src/ and bench/ with tsc first (tsconfig.bench.json) and runs the output, so
 * the figures are those of the JavaScript that ships. Run from source (`npx tsx bench/run-all.ts`), the
 * same benches include tsx's function-name wrappers (about 10% on the turn path here).
 * A module that is missing is reported and skipped; one that throws is reported, the others still run,
 * and the exit status is 1. A figure `<key>.target` is printed next to `<key>` with ok / MISSED.
 *
 * gc() is made available before any module loads (heap figures need it): through V8 flags, or, if that
 * is refused, by running this script again in a child `node --expose-gc`.
 *
 * Each figure is printed beside the last recorded one (bench/recorded-figures.json), and a watched
 * figure (the first call against its floor, the heap per idle session) worse by more than 20% is called
 * out at the end. `npm run bench -- --record` writes this run's figures as the new record (the only way
 * the file changes); `-- --only <word>` runs the benches whose title contains the word.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, extname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { besideRecorded, creepOf, loadRecorded, record } from "./recorded-figures.js";

type Figures = Record<string, number | string>;

const BENCHES: ReadonlyArray<{ title: string; file: string; entry: string }> = [
  { title: "lane scheduler", file: "lanes.bench.ts", entry: "benchLanes" },
  { title: "lane scheduler: capacity groups", file: "lane-groups.bench.ts", entry: "benchLaneGroups" },
  { title: "transcript store", file: "store.bench.ts", entry: "benchStore" },
  { title: "gateway", file: "gateway.bench.ts", entry: "benchGateway" },
  { title: "stale-reply re-check", file: "recheck.bench.ts", entry: "benchRecheck" },
  { title: "commitments", file: "commitments.bench.ts", entry: "benchCommitments" },
  { title: "model-based paths", file: "paths.bench.ts", entry: "benchPaths" },
  { title: "generated suites over your tools", file: "your-tools.bench.ts", entry: "benchYourTools" },
  { title: "HTTP API", file: "http.bench.ts", entry: "benchHttp" },
  { title: "delivery logs", file: "deliveries.bench.ts", entry: "benchDeliveries" },
  { title: "openai provider", file: "openai.bench.ts", entry: "benchOpenAI" },
  { title: "model adapters (AI SDK, Anthropic)", file: "models.bench.ts", entry: "benchModels" },
  { title: "postgres cluster", file: "postgres.bench.ts", entry: "benchPostgres" },
  {
    title: "postgres cluster over HTTP (tiller serve)",
    file: "serve-throughput.ts",
    entry: "benchServeThroughput",
  },
  { title: "postgres: what a turn costs", file: "turn-cost.ts", entry: "benchTurnCost" },
  { title: "soak", file: "soak.bench.ts", entry: "benchSoak" },
  { title: "triggers", file: "triggers.bench.ts", entry: "benchTriggers" },
  { title: "tracing", file: "tracing.bench.ts", entry: "benchTracing" },
];

const here = dirname(fileURLToPath(import.meta.url));
/** `.js` when running the compiled benches, `.ts` under tsx. */
const extension = extname(fileURLToPath(import.meta.url));
const global = globalThis as { gc?: () => void };

function enableGc(): boolean {
  if (global.gc) return true;
  try {
    setFlagsFromString("--expose-gc");
    global.gc = runInNewContext("gc") as () => void;
  } catch {
    return false;
  }
  return typeof global.gc === "function";
}

if (!enableGc() && process.env.TILLER_BENCH_CHILD !== "1") {
  // process.execArgv carries tsx's loader flags, if any, so the child runs this same file.
  const child = spawnSync(
    process.execPath,
    [...process.execArgv, "--expose-gc", fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    {
      stdio: "inherit",
      env: { ...process.env, TILLER_BENCH_CHILD: "1" },
    },
  );
  process.exit(child.status ?? 1);
}

function meets(value: number | string, target: number | string): boolean | undefined {
  const match = /^\s*(<=|>=|<|>)\s*(-?[\d.]+)/.exec(String(target));
  if (!match || typeof value !== "number") return undefined;
  const limit = Number(match[2]);
  if (match[1] === "<") return value < limit;
  if (match[1] === "<=") return value <= limit;
  if (match[1] === ">") return value > limit;
  return value >= limit;
}

const args = process.argv.slice(2);
const recording = args.includes("--record");
const onlyAt = args.indexOf("--only");
const only = onlyAt >= 0 ? args[onlyAt + 1]?.toLowerCase() : undefined;
// The JSON beside the sources (bench/), also when running the compiled copy in tmp/bench-build/bench/.
const recordedPath = join(here, extension === ".js" ? "../../../bench" : ".", "recorded-figures.json");
const recorded = loadRecorded(recordedPath);

function printTable(title: string, figures: Figures, seconds: number): void {
  const before = recorded?.benches[title];
  const keys = Object.keys(figures).filter(
    (key) => !(key.endsWith(".target") && key.slice(0, -7) in figures),
  );
  const keyWidth = Math.max(0, ...keys.map((key) => key.length));
  const valueWidth = Math.max(0, ...keys.map((key) => String(figures[key]).length));
  console.log(`\n${title}  (${seconds.toFixed(1)} s)`);
  for (const key of keys) {
    const value = figures[key]!;
    const target = figures[`${key}.target`];
    let note = "";
    if (target !== undefined) {
      const verdict = meets(value, target);
      note = `  target ${target}${verdict === undefined ? "" : verdict ? "  ok" : "  MISSED"}`;
    }
    const shown =
      typeof value === "number" ? String(value).padStart(valueWidth) : String(value).padEnd(valueWidth);
    console.log(`  ${key.padEnd(keyWidth)}  ${shown}${note}${besideRecorded(value, before?.[key])}`);
  }
}

const started = performance.now();
console.log(
  `node ${process.version}, ${availableParallelism()} CPUs, load average ${loadavg()
    .map((value) => value.toFixed(1))
    .join(" ")}, gc() ${global.gc ? "available" : "missing (heap figures approximate)"}`,
);
if (recorded) {
  console.log(
    `figures recorded ${recorded.recordedAt} (load average then ${recorded.loadAverage}) shown as "was"`,
  );
}
let failed = 0;
const ran: Record<string, Figures> = {};
const creep: string[] = [];
for (const bench of BENCHES) {
  if (only !== undefined && !bench.title.toLowerCase().includes(only)) continue;
  const path = join(here, bench.file.replace(/\.ts$/, extension));
  if (!existsSync(path)) {
    console.log(`\n${bench.title}: skipped, ${path} does not exist`);
    continue;
  }
  const t0 = performance.now();
  try {
    const module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    const run = module[bench.entry];
    if (typeof run !== "function") throw new Error(`bench/${bench.file} does not export ${bench.entry}()`);
    const figures = (await run()) as Figures;
    printTable(bench.title, figures, (performance.now() - t0) / 1000);
    ran[bench.title] = figures;
    creep.push(...creepOf(figures, recorded?.benches[bench.title]));
  } catch (error) {
    failed++;
    console.log(`\n${bench.title}: FAILED after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`  ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }
}
console.log(
  `\nall benchmarks: ${((performance.now() - started) / 1000).toFixed(1)} s${failed ? `, ${failed} failed` : ""}`,
);
if (creep.length > 0) {
  const bar = "!".repeat(100);
  console.log(`\n${bar}\nWORSE THAN RECORDED by more than the allowed margin:`);
  for (const line of creep) console.log(`  ${line}`);
  console.log(`Find the change that did it, or record the new figures on purpose (--record).\n${bar}`);
}
if (recording) {
  record(
    recordedPath,
    recorded,
    {
      recordedAt: new Date().toISOString(),
      node: process.version,
      loadAverage: loadavg()
        .map((value) => value.toFixed(1))
        .join(" "),
    },
    ran,
  );
  console.log(`\nrecorded the figures of ${Object.keys(ran).length} benches in ${recordedPath}`);
}
// Explicit exit: a stray handle left by a bench must not keep `npm run bench` alive.
process.exit(failed ? 1 : 0);
