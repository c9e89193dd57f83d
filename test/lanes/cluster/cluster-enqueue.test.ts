import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { useClusterLanes } from "../../support/cluster-lanes-suite.js";
import { deferred } from "../../support/deferred.js";
import { usePostgresSchema } from "../../support/postgres.js";

// A task's lane row is written by the lane's claim pass (enqueue_claim): one round trip where an
// INSERT and a claim were two. Order, aborts and a refused write behave as they did.

const db = usePostgresSchema("enqueue");
const lanes = useClusterLanes(db);

/** Counts the prepared statements sent by name while the spy is on. */
function statementNames(): Map<string, number> {
  const names = new Map<string, number>();
  const query = pg.Client.prototype.query;
  vi.spyOn(pg.Client.prototype, "query").mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const name = (args[0] as { name?: string } | undefined)?.name;
    if (name) names.set(name, (names.get(name) ?? 0) + 1);
    return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
  return names;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("cluster lanes: the enqueue goes in the claim", () => {
  it("writes a task's row and grants it in one statement, with no INSERT of its own", async () => {
    const a = await lanes({ main: 2 });
    const names = statementNames();
    expect(await a.run({ session: "web:one" }, async () => "ran")).toBe("ran");
    expect(names.get("tiller.enqueueClaim")).toBe(1);
    expect(names.get("tiller.lanes.enqueue")).toBeUndefined();
  });

  it("keeps first-come order across ticks on a full lane", async () => {
    const a = await lanes({ main: 1 });
    const release = deferred<void>();
    const started = deferred<void>();
    const order: string[] = [];
    const blocker = a.run({ session: "web:block" }, async () => {
      started.resolve(undefined);
      await release.promise;
    });
    await started.promise;
    const waiting: Promise<void>[] = [];
    for (const name of ["first", "second", "third"]) {
      waiting.push(a.run({ session: `web:${name}` }, async () => void order.push(name)));
      // A tick apart: each its own batch, and its own pass.
      await new Promise((done) => setImmediate(done));
    }
    release.resolve(undefined);
    await Promise.all([blocker, ...waiting]);
    expect(order).toEqual(["first", "second", "third"]);
  });

  it("gives a task aborted before its row is written no row, and rejects it with the reason", async () => {
    const a = await lanes({ main: 1 });
    const controller = new AbortController();
    const task = a.run({ session: "web:gone", signal: controller.signal }, async () => "ran");
    controller.abort(new Error("the user went away"));
    await expect(task).rejects.toThrow("the user went away");
    // A task after it still runs: the lane was not left blocked by it.
    expect(await a.run({ session: "web:next" }, async () => "ran")).toBe("ran");
    const { rows } = await db.pool.query(
      `SELECT session_key FROM ${db.schema}.lane_runs WHERE session_key = 'web:gone'`,
    );
    expect(rows).toEqual([]);
  });

  it("fails a task whose row the database refused as a failed enqueue, retryable", async () => {
    const a = await lanes({ main: 1 });
    await db.pool.query(`ALTER FUNCTION ${db.schema}.enqueue_claim RENAME TO enqueue_claim_away`);
    try {
      await expect(a.run({ session: "web:refused" }, async () => "ran")).rejects.toMatchObject({
        code: "STORE_FAILED",
        retryable: true,
      });
    } finally {
      await db.pool.query(`ALTER FUNCTION ${db.schema}.enqueue_claim_away RENAME TO enqueue_claim`);
    }
    // Sent again once the database takes it: it runs.
    const b = await lanes({ main: 1 });
    expect(await b.run({ session: "web:refused" }, async () => "ran")).toBe("ran");
  });
});
