/**
 * One enumeration in a process of its own, so its peak memory is its own:
 *   node tmp/bench-build/bench/paths-child.js MACHINE KIND
 * prints { ms, paths, maxRssMb }. With a third argument `out`, it instead writes the machine's
 * scenarios (`tiller paths MACHINE --kind KIND --out DIR`) and replays each on the real gateway:
 * prints { generateMs, replayMs, written, unreachable, failed, maxRssMb }.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadScenario } from "../src/scenario/load.js";
import { runScenario } from "../src/scenario/runner.js";
import { type MachineName, machinePaths } from "../src/testing/machine-paths.js";
import { pathsCommand } from "../src/testing/paths-command.js";

const [machine, kind, mode] = process.argv.slice(2) as [MachineName, "shortest" | "simple", string?];
const maxRssMb = () => process.resourceUsage().maxRSS / 1024;
if (mode === "out") {
  const dir = await mkdtemp(join(tmpdir(), "tiller-bench-paths-"));
  try {
    const start = performance.now();
    const summary = JSON.parse(await pathsCommand([machine, "--kind", kind, "--out", dir, "--json"])) as {
      scenarios: { written: number; unreachable: unknown[] };
    };
    const generateMs = performance.now() - start;
    const replayStart = performance.now();
    let failed = 0;
    for (const file of (await readdir(dir)).sort()) {
      const { result } = await runScenario(await loadScenario(join(dir, file)));
      if ((result.expectations ?? []).some((expectation) => !expectation.ok)) failed++;
    }
    const replayMs = performance.now() - replayStart;
    process.stdout.write(
      JSON.stringify({
        generateMs,
        replayMs,
        written: summary.scenarios.written,
        unreachable: summary.scenarios.unreachable.length,
        failed,
        maxRssMb: maxRssMb(),
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
} else {
  const start = performance.now();
  const paths = machinePaths(machine, { kind });
  const ms = performance.now() - start;
  process.stdout.write(JSON.stringify({ ms, paths: paths.length, maxRssMb: maxRssMb() }));
}
