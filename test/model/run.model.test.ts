import { describe, expect, it } from "vitest";
import { CONFIGS, pathName, shortestPaths, simplePaths } from "../support/run-graph-cases.js";
import { replayPath } from "../support/run-replay.js";

// Graph-based tests of the run machine (docs/architecture.md; invariants 4 and 5). xstate/graph enumerates the
// machine's paths over an explicit event list that includes the results of the invoked actors
// (test/support/run-graph-cases.ts); each path is then replayed on a real actor (test/support/run-replay.ts):
// after every step the real actor must be where the graph says, and the invariants must hold.

for (const config of CONFIGS) {
  const shortest = shortestPaths(config);

  describe(`run machine, ${config.title}: shortest paths`, () => {
    it("reaches every outcome of the run: done, aborted and failed", () => {
      const outcomes = new Set(shortest.map((path) => String(path.state.value)));
      for (const outcome of ["done", "aborted", "failed"]) expect(outcomes.has(outcome)).toBe(true);
    });

    for (const path of shortest) {
      it(`keeps its invariants along ${pathName(path)}`, async () => {
        await replayPath(config, path);
      });
    }
  });

  if (config.simplePaths) {
    const simple = simplePaths(config);
    describe(`run machine, ${config.title}: simple paths`, () => {
      for (const path of simple) {
        it(`keeps its invariants along ${pathName(path)}`, async () => {
          await replayPath(config, path);
        });
      }
    });
  }
}
