import { type GatewayConfigInput, parseConfig } from "../config.js";
import type { ToolDefinition } from "../ports/tool.js";
import type { Expectation } from "../scenario/check-expectations.js";
import { parseScenario } from "../scenario/load.js";
import { type RunScenarioOptions, runScenario, type ScenarioResult } from "../scenario/runner.js";
import { commitmentPathScenario } from "./commitment-path-scenario.js";
import { InvariantMonitor } from "./invariant-monitor.js";
import type { MachinePath } from "./machine-paths.js";
import { runPathScenario, type ScenarioFile } from "./run-path-scenario.js";
import { sessionPathScenario } from "./session-path-scenario.js";
import { watchedTools } from "./watched-tools.js";
import { withYourTools } from "./with-your-tools.js";

/** The scenario that drives the real gateway along a path of the run, session or commitment machine. */
export function scenarioForPath(
  path: MachinePath,
  config?: GatewayConfigInput,
  tools?: readonly ToolDefinition[],
  seed = 1,
): ScenarioFile {
  const file = baseScenario(path, config);
  return tools === undefined ? file : withYourTools(file, tools, seed);
}

function baseScenario(path: MachinePath, config?: GatewayConfigInput): ScenarioFile {
  if (path.machine === "run") return runPathScenario(path, config ?? {});
  if (path.machine === "session") return sessionPathScenario(path, config ?? {});
  if (path.machine === "commitment") return commitmentPathScenario(path, config ?? {});
  throw new TypeError(`no scenario can be generated for a ${path.machine} path yet`);
}

/** Options of {@link replayPath}: the model, tools and channel to replay a path with. */
export interface ReplayOptions extends Pick<RunScenarioOptions, "model" | "channel"> {
  /** The gateway config the scenario runs with (the one the paths were generated for). */
  config?: GatewayConfigInput;
  /**
   * Your tools: the path calls them by name with arguments drawn from their schemas, their kind
   * (cancellable, read-only) and `requires` taken from the definitions; `execute` is stubbed with the
   * path's timing unless `runTools`. Or a function that wraps the scenario's scripted tools.
   */
  tools?: readonly ToolDefinition[] | ((scripted: ToolDefinition[]) => ToolDefinition[]);
  /** Runs your tools' own `execute` instead of the path's stubs. @default false */
  runTools?: boolean;
  /** Seed of the argument draws: the same seed, the same arguments. @default 1 */
  seed?: number;
}

/** What replaying one path showed: the scenario it ran and whether every expectation held. */
export interface ReplayResult {
  ok: boolean;
  expectations: Expectation[];
  result: ScenarioResult;
  /** The failed expectations, one per line, with what was found: ready for a test failure. */
  story: string;
}

/**
 * Plays a path's scenario through the real gateway on a simulated clock and checks its expectations.
 * `model` wraps (or replaces) the scripted model and `tools` the scripted tools, so a gateway author can
 * run the path against their own adapters.
 *
 * @example
 * ```ts
 * const [path] = machinePaths("run");
 * const replay = await replayPath(path!);
 * if (!replay.ok) throw new Error(replay.story);
 * ```
 */
export async function replayPath(path: MachinePath, options: ReplayOptions = {}): Promise<ReplayResult> {
  const problems: string[] = [];
  const yours = Array.isArray(options.tools) ? (options.tools as readonly ToolDefinition[]) : undefined;
  const file = scenarioForPath(path, options.config, yours, options.seed);
  const scenario = parseScenario(JSON.stringify(file), `${path.machine}-path.json`);
  const wrap =
    typeof options.tools === "function"
      ? options.tools
      : yours && options.runTools
        ? (stubs: ToolDefinition[]) => watchedTools(stubs, yours, problems)
        : undefined;
  // The tools the gateway really ran with, for the monitor's `requires`.
  let ran: ToolDefinition[] = [];
  const { result } = await runScenario(scenario, {
    ...(options.model ? { model: options.model } : {}),
    tools: (stubs) => {
      ran = wrap ? wrap(stubs) : stubs;
      return ran;
    },
    ...(options.channel ? { channel: options.channel } : {}),
  });
  // The runtime's invariants, checked on every event of the path (as createTestGateway does).
  const monitor = new InvariantMonitor(parseConfig(options.config ?? {}).staleReplyRecheck.maxPasses, {
    requires: (name) => ran.find((tool) => tool.name === name)?.requires,
  });
  for (const event of result.events) monitor.observe(event);
  monitor.checkSettled(result.events.at(-1)?.at ?? 0);
  for (const violation of monitor.violations)
    problems.push(`invariant ${violation.invariant} broken at ${violation.at} ms: ${violation.message}`);
  const expectations = result.expectations ?? [];
  const failed = expectations.filter((expectation) => !expectation.ok);
  return {
    ok: failed.length === 0 && problems.length === 0,
    expectations,
    result,
    story: [
      `path: ${path.name}`,
      ...failed.map((expectation) => `  expected ${expectation.what}; found ${expectation.found}`),
      ...[...new Set(problems)].map((problem) => `  ${problem}`),
    ].join("\n"),
  };
}
