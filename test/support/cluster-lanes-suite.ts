import { afterEach, beforeAll } from "vitest";
import { migrate } from "../../src/adapters/postgres/migrate.js";
import { type ClusterLanes, createClusterLanes } from "../../src/lanes/cluster/cluster-lanes.js";
import type { ClusterLanesOptions } from "../../src/lanes/cluster/cluster-options.js";
import { deferred } from "./deferred.js";
import type { TestSchema } from "./postgres.js";

/** Quick leases and polls, so a suite of many lane instances in one process stays fast. */
export const FAST_LANES = { leaseMs: 900, heartbeatMs: 250, pollMs: 100 };

/**
 * Cluster-lane instances on the suite's schema (several in one process stand for several processes),
 * each closed after its test, with the lane tables emptied between tests.
 */
export function useClusterLanes(db: TestSchema) {
  const open: ClusterLanes[] = [];
  beforeAll(() => migrate(db.pool, db.schema));
  afterEach(async () => {
    await Promise.all(open.splice(0).map((l) => l.close()));
    await db.pool.query(
      `TRUNCATE ${db.schema}.lane_runs, ${db.schema}.lane_capacity, ${db.schema}.processes`,
    );
  });
  return async function lanes(
    capacity: Record<string, number> = { main: 2 },
    extra: Partial<ClusterLanesOptions> = {},
  ): Promise<ClusterLanes> {
    const created = await createClusterLanes({
      url: db.url,
      schema: db.schema,
      capacity,
      poolSize: 4,
      ...FAST_LANES,
      ...extra,
    });
    open.push(created);
    return created;
  };
}

/** Runs a task of `session` on `lanes` that holds its slot until `release()`; resolves once it runs. */
export async function holdSlot(lanes: ClusterLanes, session: string) {
  const release = deferred<void>();
  const running = deferred<void>();
  const done = lanes.run({ session }, async () => {
    running.resolve();
    await release.promise;
  });
  await running.promise;
  return { release: () => release.resolve(), done };
}
