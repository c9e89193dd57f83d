import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One PostgreSQL server for the run (the machine's, or a private one): see test/support/postgres-server.ts.
    globalSetup: ["test/support/postgres-global-setup.ts"],
    // A deadline for a test that never finishes, not a margin on how fast it runs: CI is a loaded
    // 2-core machine, where a test that waits for events can take several times its quiet time.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One test file per core. Vitest's default leaves one core free (a single worker on a 2-core CI
    // machine), while most of the slow files wait on child processes, PostgreSQL and a browser rather
    // than compute: test/cli took 174 s with one worker and 111 s with two on a 2-core machine.
    maxWorkers: availableParallelism(),
  },
});
