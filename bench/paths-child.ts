/**
 * One enumeration in a process of its own, so its peak memory is its own:
 *   node tmp/bench-build/bench/paths-child.js MACHINE KIND
 * prints { ms, paths, maxRssMb }.
 */
import { type MachineName, machinePaths } from "../src/testing/machine-paths.js";

const [machine, kind] = process.argv.slice(2) as [MachineName, "shortest" | "simple"];
const start = performance.now();
const paths = machinePaths(machine, { kind });
const ms = performance.now() - start;
process.stdout.write(
  JSON.stringify({ ms, paths: paths.length, maxRssMb: process.resourceUsage().maxRSS / 1024 }),
);
