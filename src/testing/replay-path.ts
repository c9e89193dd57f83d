import type { GatewayConfigInput } from "../config.js";
import type { Expectation } from "../scenario/check-expectations.js";
import { parseScenario } from "../scenario/load.js";
import { type RunScenarioOptions, runScenario, type ScenarioResult } from "../scenario/runner.js";
import { commitmentPathScenario } from "./commitment-path-scenario.js";
import type { MachinePath } from "./machine-paths.js";
import { runPathScenario, type ScenarioFile } from "./run-path-scenario.js";
import { sessionPathScenario } from "./session-path-scenario.js";

/** The scenario that drives the real gateway along a path of the run, session or commitment machine. */
export function scenarioForPath(path: MachinePath, config?: GatewayConfigInput): ScenarioFile {
  if (path.machine === "run") return runPathScenario(path, config ?? {});
  if (path.machine === "session") return sessionPathScenario(path, config ?? {});
  if (path.machine === "commitment") return commitmentPathScenario(path, config ?? {});
  throw new TypeError(`no scenario can be generated for a ${path.machine} path yet`);
}

/** Options of {@link replayPath}: the model, tools and channel to replay a path with. */
export interface ReplayOptions extends Pick<RunScenarioOptions, "model" | "tools" | "channel"> {
  /** The gateway config the scenario runs with (the one the paths were generated for). */
  config?: GatewayConfigInput;
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
  const file = scenarioForPath(path, options.config);
  const scenario = parseScenario(JSON.stringify(file), `${path.machine}-path.json`);
  const { result } = await runScenario(scenario, {
    ...(options.model ? { model: options.model } : {}),
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.channel ? { channel: options.channel } : {}),
  });
  const expectations = result.expectations ?? [];
  const failed = expectations.filter((expectation) => !expectation.ok);
  return {
    ok: failed.length === 0,
    expectations,
    result,
    story: [
      `path: ${path.name}`,
      ...failed.map((expectation) => `  expected ${expectation.what}; found ${expectation.found}`),
    ].join("\n"),
  };
}
