/**
 * `npm run viz` regenerates `visualizations/<machine-id>.{mmd,json}` for every machine exported from
 * `src/machines/*.machine.ts`, and the diagram blocks of README.md; `npm run viz:check` writes nothing
 * and exits 1 when any file is missing, stale or orphaned, or a README block is out of date. The
 * functions are exported so tests can run the same check on temp directories.
 */
import { realpathSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { AnyStateMachine } from "xstate";
import { toConfigJson } from "../src/viz/machine-config.js";
import { toMermaid } from "../src/viz/mermaid.js";
import { renderReadmeDiagrams } from "./readme-diagrams.js";

/** One machine found in a machine file. */
export interface LoadedMachine {
  /** File name inside the machines directory, e.g. `turn.machine.ts`. */
  file: string;
  exportName: string;
  machine: AnyStateMachine;
}

/** A generated file that does not match what the machines would produce now. */
export interface VizProblem {
  kind: "missing" | "stale" | "orphaned";
  /** File name inside the visualizations directory, e.g. `turn.mmd`. */
  file: string;
}

const MACHINE_SUFFIX = ".machine.ts";
const GENERATED = /\.(mmd|json)$/;

/**
 * True for XState machines (they expose a `root` state node and a serializable `definition`).
 *
 * @example
 * ```ts
 * isStateMachine(createMachine({})); // true
 * isStateMachine({ root: {} }); // false
 * ```
 */
export function isStateMachine(value: unknown): value is AnyStateMachine {
  if (typeof value !== "object" || value === null || !("root" in value)) return false;
  const root: unknown = value.root;
  return (
    typeof root === "object" &&
    root !== null &&
    "states" in root &&
    ("definition" in value || "toJSON" in value)
  );
}

/**
 * Imports every `*.machine.ts` in `machinesDir` (sorted by name) and returns each distinct machine export.
 * A missing directory means no machines.
 *
 * @example
 * ```ts
 * const machines = await loadMachines("src/machines");
 * machines.map((m) => m.machine.id); // ["turn", ...]
 * ```
 */
export async function loadMachines(machinesDir: string): Promise<LoadedMachine[]> {
  const files = (await readdirOrEmpty(machinesDir)).filter((f) => f.endsWith(MACHINE_SUFFIX)).sort();
  const found: LoadedMachine[] = [];
  const seen = new Set<AnyStateMachine>();
  for (const file of files) {
    const mod = (await import(pathToFileURL(path.join(machinesDir, file)).href).catch((cause: unknown) => {
      throw new Error(`Cannot import machine file ${file}`, { cause });
    })) as Record<string, unknown>;
    // Namespace keys are already sorted by spec; sort anyway so the order never depends on the loader.
    for (const exportName of Object.keys(mod).sort()) {
      const value = mod[exportName];
      // `export default m` next to `export const m` is one machine, not two.
      if (!isStateMachine(value) || seen.has(value)) continue;
      seen.add(value);
      found.push({ file, exportName, machine: value });
    }
  }
  return found;
}

/**
 * The file name stem used for a machine id (anything outside `[A-Za-z0-9._-]` becomes `_`).
 *
 * @example
 * ```ts
 * fileStem("chat/turn"); // "chat_turn"
 * ```
 */
export function fileStem(machineId: string): string {
  return machineId.replace(/[^A-Za-z0-9._-]/g, "_");
}

/**
 * Renders every machine to its `.mmd` and `.json` file contents, keyed by file name in sorted order.
 * Throws when two machines would write the same files.
 *
 * @example
 * ```ts
 * const files = renderVisualizations(await loadMachines("src/machines"));
 * files.get("turn.mmd"); // "stateDiagram-v2\n..."
 * ```
 */
export function renderVisualizations(machines: readonly LoadedMachine[]): Map<string, string> {
  const owners = new Map<string, LoadedMachine>();
  for (const loaded of machines) {
    const stem = fileStem(loaded.machine.id);
    const other = owners.get(stem);
    if (other) {
      throw new Error(
        `Machines ${nameOf(other)} and ${nameOf(loaded)} both map to visualizations/${stem}.*; give them distinct ids.`,
      );
    }
    owners.set(stem, loaded);
  }
  const files = new Map<string, string>();
  for (const stem of [...owners.keys()].sort()) {
    const { machine } = owners.get(stem)!;
    files.set(`${stem}.json`, toConfigJson(machine));
    files.set(`${stem}.mmd`, toMermaid(machine));
  }
  return files;
}

/**
 * Compares expected file contents with what is on disk: missing, stale (content differs) and orphaned
 * (generated-looking file that no machine produces). Sorted by file name.
 *
 * @example
 * ```ts
 * diffVisualizations(new Map([["a.mmd", "x"]]), new Map([["b.mmd", "y"]]));
 * // [{ kind: "missing", file: "a.mmd" }, { kind: "orphaned", file: "b.mmd" }]
 * ```
 */
export function diffVisualizations(
  expected: ReadonlyMap<string, string>,
  actual: ReadonlyMap<string, string>,
): VizProblem[] {
  const problems: VizProblem[] = [];
  for (const [file, content] of expected) {
    const onDisk = actual.get(file);
    if (onDisk === undefined) problems.push({ kind: "missing", file });
    else if (onDisk !== content) problems.push({ kind: "stale", file });
  }
  for (const file of actual.keys()) if (!expected.has(file)) problems.push({ kind: "orphaned", file });
  return problems.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/**
 * Reads the generated files (`*.mmd`, `*.json`) in `vizDir`; other files such as a README are ignored.
 *
 * @example
 * ```ts
 * const onDisk = await readVisualizations("visualizations");
 * ```
 */
export async function readVisualizations(vizDir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const file of (await readdirOrEmpty(vizDir)).filter((f) => GENERATED.test(f)).sort()) {
    files.set(file, await readFile(path.join(vizDir, file), "utf8"));
  }
  return files;
}

/**
 * The drift check behind `npm run viz:check`: an empty list means `vizDir` matches the machines.
 *
 * @example
 * ```ts
 * const problems = await checkVisualizations("src/machines", "visualizations");
 * if (problems.length > 0) process.exitCode = 1;
 * ```
 */
export async function checkVisualizations(machinesDir: string, vizDir: string): Promise<VizProblem[]> {
  const expected = renderVisualizations(await loadMachines(machinesDir));
  return diffVisualizations(expected, await readVisualizations(vizDir));
}

/**
 * Brings `vizDir` up to date: writes missing and stale files, deletes orphaned ones, and returns what changed.
 *
 * @example
 * ```ts
 * const changes = await writeVisualizations("src/machines", "visualizations");
 * ```
 */
export async function writeVisualizations(machinesDir: string, vizDir: string): Promise<VizProblem[]> {
  const expected = renderVisualizations(await loadMachines(machinesDir));
  const changes = diffVisualizations(expected, await readVisualizations(vizDir));
  await mkdir(vizDir, { recursive: true });
  for (const { kind, file } of changes) {
    const target = path.join(vizDir, file);
    if (kind === "orphaned") await rm(target);
    else await writeFile(target, expected.get(file)!, "utf8");
  }
  return changes;
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

function nameOf(loaded: LoadedMachine): string {
  return `"${loaded.machine.id}" (${loaded.file} ${loaded.exportName})`;
}

async function main(args: readonly string[]): Promise<number> {
  const unknown = args.filter((a) => a !== "--check");
  if (unknown.length > 0) {
    console.error(`Unknown argument(s): ${unknown.join(" ")}\nUsage: tsx scripts/viz.ts [--check]`);
    return 2;
  }
  const repo = fileURLToPath(new URL("..", import.meta.url));
  const machinesDir = path.join(repo, "src", "machines");
  const vizDir = path.join(repo, "visualizations");
  const readmePath = path.join(repo, "README.md");
  const shown = (file: string) => path.relative(process.cwd(), path.join(vizDir, file));
  const readme = await readFile(readmePath, "utf8");
  const wantedReadme = renderReadmeDiagrams(readme, await loadMachines(machinesDir));
  if (args.includes("--check")) {
    const problems = await checkVisualizations(machinesDir, vizDir);
    if (wantedReadme !== readme) {
      problems.push({ kind: "stale", file: "../README.md" });
    }
    if (problems.length === 0) {
      console.log("visualizations are up to date");
      return 0;
    }
    for (const { kind, file } of problems) console.error(`${kind.padEnd(8)} ${shown(file)}`);
    console.error(`${problems.length} visualization file(s) out of date; run \`npm run viz\`.`);
    return 1;
  }
  const changes = await writeVisualizations(machinesDir, vizDir);
  if (wantedReadme !== readme) {
    await writeFile(readmePath, wantedReadme, "utf8");
    console.log("wrote   README.md (diagram blocks)");
  }
  for (const { kind, file } of changes)
    console.log(`${kind === "orphaned" ? "removed" : "wrote  "} ${shown(file)}`);
  console.log(
    changes.length === 0 ? "visualizations already up to date" : `${changes.length} file(s) updated`,
  );
  return 0;
}

// Run only as a CLI, not when a test imports the functions above.
function isEntryPoint(): boolean {
  try {
    const entry = process.argv[1];
    return entry !== undefined && realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

// An unexpected error rejects the top-level await, which prints it and exits non-zero.
if (isEntryPoint()) process.exitCode = await main(process.argv.slice(2));
