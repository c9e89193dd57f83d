import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One PostgreSQL server for the run (the machine's, or a private one): see test/support/postgres-server.ts.
    globalSetup: ["test/support/postgres-global-setup.ts"],
    // A deadline for a test that never finishes, not a margin on how fast it runs: CI is a loaded
    // 2-core machine, where a test that waits for events can take several times its quiet time.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
