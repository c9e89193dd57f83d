import type pg from "pg";

/** One workload lane, cluster-wide. */
export interface ClusterLaneView {
  lane: string;
  /** From `lane_capacity`; null for a lane with rows but no configured capacity. */
  capacity: number | null;
  active: number;
  queued: number;
}

/** One member of the cluster. */
export interface ClusterProcessView {
  id: string;
  startedAt: string;
  /** ISO time its membership runs until (renewed by its heartbeat). */
  aliveUntil: string;
  alive: boolean;
  /** Its active lane runs, all lanes. */
  active: number;
}

/** Where a session lives: its owner (`session_owners`) and the process running its active run. */
export interface ClusterSessionView {
  session: string;
  /** The owning process (null when nothing owns it, or ownership is not recorded). */
  owner: string | null;
  ownerLeaseUntil: string | null;
  /** The process running its active lane run, and the run's lane (null when none runs). */
  runningOn: string | null;
  lane: string | null;
}

/** `GET /v1/cluster` on a server that runs on PostgreSQL (docs/http.md). */
export interface ClusterView {
  clustered: true;
  schema: string;
  /** The process that answered. */
  process: string;
  /** The database's time of the reading (ISO). */
  at: string;
  lanes: ClusterLaneView[];
  processes: ClusterProcessView[];
  /** Sessions with an owner or an active run, at most 500, by key. */
  sessions: ClusterSessionView[];
}

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
