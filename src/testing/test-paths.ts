import type { MachinePath } from "./machine-paths.js";
import { type ReplayOptions, replayPath, scenarioForPath } from "./replay-path.js";
import { UnrealizablePathError } from "./session-path-scenario.js";

/** What a test body is given: vitest's test context, whose `skip(note)` marks the test skipped. */
export interface PathTestContext {
  skip?: (note?: string) => void;
}

/** The shape of vitest's (and most runners') `it` / `test`. */
export type TestFunction = (
  name: string,
  body: (context: PathTestContext) => Promise<void>,
  timeoutMs?: number,
) => void;

/**
 * Makes one test per path: each replays its path through the real gateway (your config, your tools,
 * your model) and fails with the expectations it missed and what was found instead. A path the gateway
 * cannot take (no message starts it, no tool of yours fits it) is skipped with the reason as its note;
 * under a runner without `context.skip` its test passes with nothing to replay. Never throws while
 * registering.
 *
 * @example
 * ```ts
 * import { describe, it } from "vitest";
 * import { machinePaths, testPaths } from "tiller-gateway/testing";
 * import { tools } from "../src/tools.js";
 * const config = { staleReplyRecheck: { maxPasses: 1 } };
 * describe("session paths", () => testPaths(it, machinePaths("session", { config }), { config, tools }));
 * ```
 */
export function testPaths(
  test: TestFunction,
  paths: readonly MachinePath[],
  options: ReplayOptions = {},
): void {
  for (const path of paths) {
    const cannot = unrealizable(path, options);
    test(path.name, async (context) => {
      if (cannot !== undefined) {
        context?.skip?.(`the gateway cannot take this path: ${cannot}`);
        return;
      }
      const replay = await replayPath(path, options);
      if (!replay.ok) throw new Error(replay.story);
    });
  }
}

/** Why the gateway cannot take the path, or nothing when it can. */
function unrealizable(path: MachinePath, options: ReplayOptions): string | undefined {
  try {
    const tools = Array.isArray(options.tools) ? options.tools : undefined;
    scenarioForPath(path, options.config, tools, options.seed);
    return undefined;
  } catch (error) {
    if (error instanceof UnrealizablePathError) return error.message;
    if (error instanceof TypeError && /no scenario can be generated/.test(error.message))
      return error.message;
    // Anything else (a schema the generator cannot satisfy) fails the path's test, not the registration.
    return undefined;
  }
}
