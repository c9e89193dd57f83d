import type { ToolDefinition } from "../src/ports/tool.js";
import { machinePaths } from "../src/testing/machine-paths.js";
import { replayPath, scenarioForPath } from "../src/testing/replay-path.js";
import { UnrealizablePathError } from "../src/testing/session-path-scenario.js";
import { type Figures, round } from "./bench-support.js";

/** `n` tools, alternately cancellable, each with a schema of a few typed fields. */
function tools(n: number): ToolDefinition[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `tool_${i}`,
    parameters: {
      type: "object",
      properties: {
        id: { type: "string", pattern: "^[A-Z]-[0-9]{3}$" },
        count: { type: "integer", minimum: 1, maximum: 99 },
        tags: { type: "array", items: { enum: ["a", "b", "c"] }, maxItems: 3 },
      },
      required: ["id", "count"],
      additionalProperties: false,
    },
    cancellable: i % 2 === 0,
    ...(i === 1 ? { requires: ["payments"] } : {}),
    execute: async () => "ok",
  }));
}

/**
 * Generated suites over an author's tools: scenarios generated per second (arguments drawn from each
 * tool's schema) and paths replayed per second through the real gateway, with 2 and with 10 tools,
 * against the same paths with the kit's own canned tools (the floor) in the same run; and the whole
 * session suite's wall time (target: under 30 s).
 */
export async function benchYourTools(): Promise<Figures> {
  const figures: Figures = {};
  const config = { staleReplyRecheck: { maxPasses: 1 } };
  for (const machine of ["session", "run"] as const) {
    const paths = machinePaths(machine, { config });
    for (const count of [0, 2, 10]) {
      const yours = count === 0 ? undefined : tools(count);
      const key = `yourTools.${machine}.${count === 0 ? "canned" : `${count}tools`}`;
      let started = performance.now();
      let generated = 0;
      for (const path of paths) {
        try {
          scenarioForPath(path, config, yours);
          generated++;
        } catch (error) {
          if (!(error instanceof UnrealizablePathError)) throw error;
        }
      }
      const generateMs = performance.now() - started;
      started = performance.now();
      let failed = 0;
      let replayed = 0;
      for (const path of paths) {
        try {
          scenarioForPath(path, config, yours);
        } catch {
          continue;
        }
        replayed++;
        if (!(await replayPath(path, { config, ...(yours ? { tools: yours } : {}) })).ok) failed++;
      }
      const replayMs = performance.now() - started;
      figures[`${key}.paths`] = paths.length;
      figures[`${key}.scenariosPerSec`] = round((generated / generateMs) * 1000, 0);
      figures[`${key}.pathsReplayedPerSec`] = round((replayed / replayMs) * 1000, 1);
      figures[`${key}.failed`] = failed;
      figures[`${key}.suiteMs`] = round(generateMs + replayMs, 0);
      if (machine === "session") figures[`${key}.suiteMs.target`] = "< 30000";
    }
    for (const count of [2, 10]) {
      const floor = figures[`yourTools.${machine}.canned.pathsReplayedPerSec`] as number;
      const mine = figures[`yourTools.${machine}.${count}tools.pathsReplayedPerSec`] as number;
      figures[`yourTools.${machine}.${count}tools.replayRatioToCanned`] = round(mine / floor, 2);
    }
  }
  return figures;
}
