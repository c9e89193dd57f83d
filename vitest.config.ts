import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // One PostgreSQL server for the run (the machine's, or a private one): see test/support/postgres-server.ts.
    globalSetup: ["test/support/postgres-global-setup.ts"],
  },
});
