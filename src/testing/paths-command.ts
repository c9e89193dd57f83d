import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { loadToolsFile, UsageError as ServeUsageError } from "../cli/serve-setup.js";
import type { GatewayConfigInput } from "../config.js";
import { ConfigError } from "../errors.js";
import type { ToolDefinition } from "../ports/tool.js";
import { MACHINE_NAMES, type MachineName, machinePaths } from "./machine-paths.js";
import { scenarioForPath } from "./replay-path.js";
import { UnrealizablePathError } from "./session-path-scenario.js";

export const PATHS_USAGE = `usage: tiller paths MACHINE [--kind shortest|simple] [--json] [--out DIR] [--config FILE]
                    [--tools FILE.mjs [--run-tools]] [--seed N]

  MACHINE   ${MACHINE_NAMES.join(", ")}
  --kind    shortest (default): a shortest path to every state; simple: complete simple paths (bounded)
  --json    print { machine, paths: [{ name, states, events }] }
  --out     write one runnable scenario per path (run, session and commitment machines) into DIR, with
            expect blocks; paths the gateway cannot take are listed with the reason
  --config  a gateway config (JSON or YAML) whose settings shape the graph (maxPasses, queue mode)
  --tools   your tools (default export: an array of tool definitions): scenarios call them by name with
            arguments drawn from their schemas, their kind and requires taken from the definitions;
            execute is stubbed with the path's timing
  --run-tools  the scenarios are meant to run your tools' own execute: run them with
            tiller run DIR --tools FILE.mjs (each file says so)
  --seed    seed of the argument draws (default 1)`;

/** Thrown for a mistake on the command line; the CLI prints it as one line and exits 2. */
export class UsageError extends Error {}

/**
 * `tiller paths`: enumerates a machine's paths, and with `--out` writes the scenarios that drive the
 * real gateway along them. Returns the text to print.
 */
export async function pathsCommand(args: readonly string[]): Promise<string> {
  let machine: string | undefined;
  let kind: "shortest" | "simple" = "shortest";
  let json = false;
  let out: string | undefined;
  let configFile: string | undefined;
  let toolsFile: string | undefined;
  let runTools = false;
  let seed = 1;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value = () => {
      const next = args[++i];
      if (next === undefined || next.startsWith("--")) throw new UsageError(`${arg} needs a value`);
      return next;
    };
    if (arg === "--json") json = true;
    else if (arg === "--kind") {
      const given = value();
      if (given !== "shortest" && given !== "simple")
        throw new UsageError(`--kind: expected shortest or simple, found ${given}`);
      kind = given;
    } else if (arg === "--out") out = value();
    else if (arg === "--config") configFile = value();
    else if (arg === "--tools") toolsFile = value();
    else if (arg === "--run-tools") runTools = true;
    else if (arg === "--seed") {
      const given = value();
      seed = Number(given);
      if (!Number.isInteger(seed)) throw new UsageError(`--seed: expected an integer, found ${given}`);
    } else if (arg.startsWith("--")) throw new UsageError(`unknown option ${arg}`);
    else if (machine === undefined) machine = arg;
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  if (!isMachine(machine)) {
    throw new UsageError(
      machine === undefined
        ? "MACHINE is missing"
        : `unknown machine ${machine}; expected one of ${MACHINE_NAMES.join(", ")}`,
    );
  }
  if (runTools && toolsFile === undefined) throw new UsageError("--run-tools needs --tools FILE.mjs");
  const config = configFile === undefined ? undefined : await readConfig(configFile);
  const tools = toolsFile === undefined ? undefined : await readTools(toolsFile);
  const paths = machinePaths(machine, { kind, ...(config === undefined ? {} : { config }) });
  let written = 0;
  const skipped: Array<{ path: string; reason: string }> = [];
  if (out !== undefined) {
    if (machine !== "run" && machine !== "session" && machine !== "commitment") {
      throw new UsageError(
        `--out writes scenarios for the run, session and commitment machines, not ${machine}`,
      );
    }
    await mkdir(out, { recursive: true });
    const width = String(paths.length).length;
    for (const [index, path] of paths.entries()) {
      let scenario: ReturnType<typeof scenarioForPath>;
      try {
        scenario = scenarioForPath(path, config, tools, seed);
      } catch (error) {
        if (!(error instanceof UnrealizablePathError)) throw error;
        skipped.push({ path: path.name, reason: error.message });
        continue;
      }
      const file = join(out, `${machine}-${String(index + 1).padStart(width, "0")}.yaml`);
      const how = runTools ? `# run with: tiller run ${out} --tools ${toolsFile}\n` : "";
      await writeFile(file, `# ${path.name}\n${how}${stringifyYaml(scenario, { lineWidth: 0 })}`);
      written++;
    }
  }
  if (json) {
    return JSON.stringify({
      machine,
      kind,
      paths: paths.map((path) => ({ name: path.name, states: path.states, events: path.events })),
      ...(out === undefined ? {} : { scenarios: { dir: out, written, unreachable: skipped } }),
    });
  }
  const lines = paths.map((path, index) => `${index + 1}. ${path.name}`);
  if (skipped.length > 0) {
    lines.push(`not written, the gateway cannot take these paths:`);
    for (const { path, reason } of skipped) lines.push(`  ${path}`, `    ${reason}`);
  }
  const outcome = out
    ? `; ${written} scenarios written to ${out}${skipped.length > 0 ? ` (${skipped.length} ${skipped.length === 1 ? "path" : "paths"} the gateway cannot take)` : ""}`
    : "";
  lines.push(`${paths.length} ${kind} paths of the ${machine} machine${outcome}`);
  return lines.join("\n");
}

function isMachine(name: string | undefined): name is MachineName {
  return MACHINE_NAMES.includes(name as MachineName);
}

async function readTools(file: string): Promise<ToolDefinition[]> {
  try {
    return await loadToolsFile(file);
  } catch (error) {
    if (error instanceof ServeUsageError) throw new UsageError(error.message);
    throw error;
  }
}

async function readConfig(file: string): Promise<GatewayConfigInput> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`--config ${file}: cannot be read (${(error as Error).message})`);
  }
  try {
    const parsed: unknown = file.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
    return (parsed ?? {}) as GatewayConfigInput;
  } catch (error) {
    throw new ConfigError("--config", "JSON or YAML", (error as Error).message.split("\n")[0]);
  }
}
