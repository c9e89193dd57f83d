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
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, extname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type Figures = Record<string, number | string>;

const BENCHES: ReadonlyArray<{ title: string; file: string; entry: string }> = [
  { title: "lane scheduler", file: "lanes.bench.ts", entry: "benchLanes" },
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
    [...process.execArgv, "--expose-gc", fileURLToPath(import.meta.url)],
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

function printTable(title: string, figures: Figures, seconds: number): void {
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
    console.log(`  ${key.padEnd(keyWidth)}  ${shown}${note}`);
  }
}

const started = performance.now();
console.log(
  `node ${process.version}, ${availableParallelism()} CPUs, load average ${loadavg()
    .map((value) => value.toFixed(1))
    .join(" ")}, gc() ${global.gc ? "available" : "missing (heap figures approximate)"}`,
);
let failed = 0;
for (const bench of BENCHES) {
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
  } catch (error) {
    failed++;
    console.log(`\n${bench.title}: FAILED after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`  ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }
}
console.log(
  `\nall benchmarks: ${((performance.now() - started) / 1000).toFixed(1)} s${failed ? `, ${failed} failed` : ""}`,
);
// Explicit exit: a stray handle left by a bench must not keep `npm run bench` alive.
process.exit(failed ? 1 : 0);
