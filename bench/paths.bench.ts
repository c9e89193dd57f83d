import { spawnSync } from "node:child_process";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { MACHINE_NAMES, machinePaths } from "../src/testing/machine-paths.js";
import { replayPath } from "../src/testing/replay-path.js";
import { type Figures, round } from "./bench-support.js";

/**
 * `tiller paths` for every machine, shortest and simple: wall time and peak memory of one enumeration
 * in a process of its own (targets: each under 10 s and 1 GiB), against the process's own start-up
 * (an empty enumeration run in the same way) measured in the same run; then replaying every generated
 * run-machine scenario through the real gateway.
 */
export async function benchPaths(): Promise<Figures> {
  const figures: Figures = {};
  const child = fileURLToPath(
    new URL(`./paths-child${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
  );
  const args = extname(child) === ".ts" ? ["--import", "tsx", child] : [child];
  for (const machine of MACHINE_NAMES) {
    for (const kind of ["shortest", "simple"] as const) {
      const started = performance.now();
      const result = spawnSync(process.execPath, [...args, machine, kind], { encoding: "utf8" });
      const wallMs = performance.now() - started;
      if (result.status !== 0) throw new Error(`paths-child ${machine} ${kind} failed: ${result.stderr}`);
      const measured = JSON.parse(result.stdout) as { ms: number; paths: number; maxRssMb: number };
      const key = `paths.${machine}.${kind}`;
      figures[`${key}.count`] = measured.paths;
      figures[`${key}.enumerateMs`] = round(measured.ms, 1);
      figures[`${key}.processMs`] = round(wallMs, 0);
      figures[`${key}.processMs.target`] = "< 10000";
      figures[`${key}.peakRssMb`] = round(measured.maxRssMb, 0);
      figures[`${key}.peakRssMb.target`] = "< 1024";
    }
  }
  const paths = machinePaths("run");
  const started = performance.now();
  let failed = 0;
  for (const path of paths) if (!(await replayPath(path)).ok) failed++;
  const replayMs = performance.now() - started;
  figures["replay.run.shortest.scenarios"] = paths.length;
  figures["replay.run.shortest.failed"] = failed;
  figures["replay.run.shortest.totalMs"] = round(replayMs, 0);
  figures["replay.run.shortest.perScenarioMs"] = round(replayMs / paths.length, 1);
  for (const kind of ["shortest", "simple"] as const) {
    const started = performance.now();
    const result = spawnSync(process.execPath, [...args, "commitment", kind, "out"], { encoding: "utf8" });
    const wallMs = performance.now() - started;
    if (result.status !== 0) throw new Error(`paths-child commitment ${kind} out failed: ${result.stderr}`);
    const measured = JSON.parse(result.stdout) as {
      generateMs: number;
      replayMs: number;
      written: number;
      unreachable: number;
      failed: number;
      maxRssMb: number;
    };
    const key = `out.commitment.${kind}`;
    figures[`${key}.written`] = measured.written;
    figures[`${key}.unreachable`] = measured.unreachable;
    figures[`${key}.failed`] = measured.failed;
    figures[`${key}.generateMs`] = round(measured.generateMs, 0);
    figures[`${key}.replayMs`] = round(measured.replayMs, 0);
    figures[`${key}.processMs`] = round(wallMs, 0);
    figures[`${key}.processMs.target`] = "< 10000";
    figures[`${key}.peakRssMb`] = round(measured.maxRssMb, 0);
    figures[`${key}.peakRssMb.target`] = "< 1024";
  }
  return figures;
}
