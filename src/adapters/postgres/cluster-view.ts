import type pg from "pg";
// The view's types live apart so that the public declarations never import pg's types.
import type { ClusterView } from "./cluster-view.types.js";

/**
 * A reading of the cluster from the database: the lanes (capacity, active, queued), the processes and
 * which one owns or runs each session. One snapshot transaction, so the three lists agree.
 */
export async function readClusterView(pool: pg.Pool, schema: string, process: string): Promise<ClusterView> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const at = await client.query<{ at: Date }>("SELECT now() AS at");
    const lanes = await client.query<{
      lane: string;
      capacity: number | null;
      active: number;
      queued: number;
    }>(
      `SELECT coalesce(c.lane, r.lane) AS lane, c.capacity, coalesce(r.active, 0)::int AS active,
              coalesce(r.queued, 0)::int AS queued
         FROM lane_capacity c
         FULL JOIN (SELECT lane, count(*) FILTER (WHERE state = 'active') AS active,
                           count(*) FILTER (WHERE state = 'queued') AS queued
                      FROM lane_runs GROUP BY lane) r ON r.lane = c.lane
        ORDER BY 1`,
    );
    const processes = await client.query<{
      id: string;
      started_at: Date;
      alive_until: Date;
      alive: boolean;
      active: number;
    }>(
      `SELECT p.process_id AS id, p.started_at, p.alive_until, p.alive_until > now() AS alive,
              (SELECT count(*) FROM lane_runs r WHERE r.owner = p.process_id AND r.state = 'active')::int AS active
         FROM processes p ORDER BY p.started_at, p.process_id`,
    );
    const sessions = await client.query<{
      session: string;
      owner: string | null;
      lease_until: Date | null;
      running_on: string | null;
      lane: string | null;
    }>(
      `SELECT coalesce(o.session_key, r.session_key) AS session, o.owner, o.lease_until,
              r.owner AS running_on, r.lane
         FROM session_owners o
         FULL JOIN (SELECT session_key, owner, lane FROM lane_runs WHERE state = 'active') r
           ON r.session_key = o.session_key
        ORDER BY 1 LIMIT 500`,
    );
    await client.query("COMMIT");
    return {
      clustered: true,
      schema,
      process,
      at: at.rows[0]!.at.toISOString(),
      lanes: lanes.rows,
      processes: processes.rows.map((row) => ({
        id: row.id,
        startedAt: row.started_at.toISOString(),
        aliveUntil: row.alive_until.toISOString(),
        alive: row.alive,
        active: row.active,
      })),
      sessions: sessions.rows.map((row) => ({
        session: row.session,
        owner: row.owner,
        ownerLeaseUntil: row.lease_until?.toISOString() ?? null,
        runningOn: row.running_on,
        lane: row.lane,
      })),
    };
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
