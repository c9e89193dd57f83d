/**
 * The cluster claim with a long queue: one lane with one slot and `backlog` waiting rows (sessions of
 * two rows, the three priorities mixed, aging on), the claim pass as the lanes run it (its quick path)
 * against the full pass over every waiting row, median of 20 each, in the same run.
 */

import { createPool } from "../src/adapters/postgres/connection.js";
import { migrate } from "../src/adapters/postgres/migrate.js";
import * as sql from "../src/lanes/cluster/claim-sql.js";
import { ClusterDb } from "../src/lanes/cluster/cluster-db.js";
import { type Figures, median, round } from "./bench-support.js";

const AGING_MS = 60_000;

export async function claimBacklog(url: string, schema: string, backlog: number): Promise<Figures> {
  const pool = createPool({ url, schema, poolSize: 2 });
  try {
    await migrate(pool, schema);
    await pool.query(
      `INSERT INTO processes (process_id, alive_until) VALUES ('bench', now() + interval '1 hour')
       ON CONFLICT (process_id) DO UPDATE SET alive_until = excluded.alive_until`,
    );
    await pool.query("DELETE FROM lane_runs WHERE lane = 'backlog'");
    await pool.query(
      `INSERT INTO lane_runs (lane, session_key, priority, state, owner, local_id)
       SELECT 'backlog', 'b' || (i % $1), i % 3, 'queued', 'bench', i FROM generate_series(1, $2) AS i`,
      [Math.floor(backlog / 2), backlog],
    );
    await pool.query("ANALYZE lane_runs");
    const db = new ClusterDb(pool, schema, "bench", 60_000, AGING_MS);
    const quick: number[] = [];
    const full: number[] = [];
    for (let i = 0; i < 20; i++) {
      let started = performance.now();
      for (const grant of (await db.claim("backlog", 1)) ?? []) {
        quick.push(performance.now() - started);
        await db.complete(grant.id, grant.fence);
      }
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        started = performance.now();
        await client.query(sql.CLAIM, ["backlog", 1, 60_000, AGING_MS, "bench", 0, 60_000]);
        full.push(performance.now() - started);
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    }
    const key = `claim.backlog${backlog / 1000}k`;
    return {
      [`${key}.quickMs`]: round(median(quick)),
      [`${key}.fullPassMs`]: round(median(full)),
      [`${key}.ratio.fullToQuick`]: round(median(full) / median(quick), 1),
    };
  } finally {
    await pool.query("DELETE FROM lane_runs WHERE lane = 'backlog'").catch(() => {});
    await pool.end();
  }
}
