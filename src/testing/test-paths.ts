import type { MachinePath } from "./machine-paths.js";
import { type ReplayOptions, replayPath } from "./replay-path.js";

/** The shape of vitest's (and most runners') `it` / `test`. */
export type TestFunction = (name: string, body: () => Promise<void>, timeoutMs?: number) => void;

/**
 * Makes one test per path: each replays its path through the real gateway and fails with the
 * expectations it missed and what was found instead.
 *
 * @example
 * ```ts
 * import { describe, it } from "vitest";
 * import { machinePaths, testPaths } from "tiller-gateway/testing";
 * describe("run machine paths", () => testPaths(it, machinePaths("run"), { model: (scripted) => myModel(scripted) }));
 * ```
 */
export function testPaths(
  test: TestFunction,
  paths: readonly MachinePath[],
  options: ReplayOptions = {},
): void {
  for (const path of paths) {
    test(path.name, async () => {
      const replay = await replayPath(path, options);
      if (!replay.ok) throw new Error(replay.story);
    });
  }
}
