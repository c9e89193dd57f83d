import { AsyncLocalStorage } from "node:async_hooks";
import { describe, expect, it } from "vitest";
import { useClusterLanes } from "../../support/cluster-lanes-suite.js";
import { deferred } from "../../support/deferred.js";
import { usePostgresSchema } from "../../support/postgres.js";

// The cluster lanes start a task from a grant's poll: it still runs in its enqueuer's async context.

const db = usePostgresSchema("lane_context");
const lanes = useClusterLanes(db);

describe("cluster lane tasks keep their enqueuer's async context", () => {
  it("two sessions, one slot: each task sees its own context", async () => {
    const storage = new AsyncLocalStorage<string>();
    const cluster = await lanes({ main: 1 });
    const gate = deferred<void>();
    const running = deferred<void>();
    const seen: Array<[string, string | undefined]> = [];
    const a = storage.run("request-A", () =>
      cluster.run({ session: "A" }, async () => {
        seen.push(["A", storage.getStore()]);
        running.resolve();
        await gate.promise;
      }),
    );
    await running.promise;
    const b = storage.run("request-B", () =>
      cluster.run({ session: "B" }, async () => {
        seen.push(["B", storage.getStore()]);
      }),
    );
    storage.run("someone else", () => gate.resolve());
    await Promise.all([a, b]);
    expect(seen).toEqual([
      ["A", "request-A"],
      ["B", "request-B"],
    ]);
  });
});
