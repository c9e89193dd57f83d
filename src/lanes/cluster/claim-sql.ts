// The SQL of the cluster lanes (see docs/postgres.md for the protocol). Names are unqualified: the
// connections' search_path is the adapter's schema. `$lease` parameters are intervals in milliseconds.

/** Enqueues a batch in order (ids follow the order, so FIFO is the order of calls). */
export const ENQUEUE = `
INSERT INTO lane_runs (lane, session_key, priority, state, owner, local_id)
SELECT u.lane, u.session_key, u.priority, 'queued', $4, u.local_id
  FROM unnest($1::text[], $2::text[], $3::smallint[], $5::bigint[])
       WITH ORDINALITY AS u(lane, session_key, priority, local_id, ord)
 ORDER BY u.ord
RETURNING id, local_id`;

/**
 * A waiting row's priority level now: its base level, raised one level for every `$agingMs` it has
 * waited (0 turns aging off), never above foreground (0). Read on the database's clock, so every
 * process ages a row alike.
 */
export const LEVEL = (agingMs: string, row = "r") => `CASE WHEN ${agingMs} > 0
   THEN greatest(0, ${row}.priority - floor(extract(epoch FROM clock_timestamp() - ${row}.enqueued_at) * 1000 / ${agingMs}))
   ELSE ${row}.priority END`;

/**
 * When a grant's lease ends: `own` ms from now for the claimant `self`'s rows; for another process's,
 * `other` ms after that process's last renewal (its `alive_until` less the lease `own`), by when its
 * next heartbeat has renewed it to a full lease. A slot granted to a process that has just died (it
 * still looked alive) so comes back soon after its last renewal rather than a full lease later.
 */
export const GRANT_LEASE = (self: string, own: string, other: string) => `CASE WHEN owner = ${self}
    THEN clock_timestamp() + ${own}::float8 * interval '1 millisecond'
    ELSE least(clock_timestamp() + ${own}::float8 * interval '1 millisecond',
               (SELECT p.alive_until FROM processes p WHERE p.process_id = owner)
               + (${other}::float8 - ${own}::float8) * interval '1 millisecond') END`;

/** The lane `$1`'s free slots (`$2`: its capacity when none is stored), as the CTE `cap`. */
const FREE_SLOTS = `cap AS (
  SELECT greatest(coalesce((SELECT capacity FROM lane_capacity WHERE lane = $1), $2)
                  - (SELECT count(*) FROM lane_runs WHERE lane = $1 AND state = 'active'), 0) AS free)`;

/**
 * A waiting row `row` may start: no run of its session is active and its process is alive. A row of
 * another process than the claimant `self` is granted only while that process renews on time (its
 * `alive_until` more than `ahead` ms away): a process killed a moment ago still looks alive for a
 * lease, and a slot granted to it would stay held, unused, for a further lease. A live process whose
 * renewal is late claims its own rows at its next poll.
 */
export const RUNNABLE = (row: string, self: string, ahead: string) => `NOT EXISTS (SELECT 1 FROM lane_runs a
                  WHERE a.session_key = ${row}.session_key AND a.state = 'active')
     AND EXISTS (SELECT 1 FROM processes p WHERE p.process_id = ${row}.owner
                  AND p.alive_until > clock_timestamp()
                      + CASE WHEN p.process_id = ${self} THEN 0 ELSE ${ahead}::float8 END * interval '1 millisecond')`;

/**
 * Grants the lane's free slots, under the lane's advisory lock (what makes its capacity exact): the
 * reference the claim the lanes run is checked against (the property test, the backlog bench). A
 * session's head is its first waiting row in any lane by priority level (aged, see LEVEL), then
 * enqueue order (as in a session lane of the in-process scheduler); a session with an active run
 * waits (the unique index enforces it anyway); rows of processes no longer alive are passed over (the
 * reaper drops them), as are those of other processes not renewing on time (see RUNNABLE: `$5` this
 * process, `$6` ms). Heads then go by priority level, then by enqueue order. Each grant takes a new
 * fencing token and a lease (GRANT_LEASE: `$3`, or `$7` for another process). `$4`: the aging period
 * (ms).
 */
export const CLAIM = `
WITH ${FREE_SLOTS},
heads AS (
  SELECT DISTINCT ON (r.session_key) r.id, r.lane, r.session_key, r.owner, ${LEVEL("$4::float8")} AS level
    FROM lane_runs r
   WHERE r.state = 'queued'
     AND r.session_key IN (SELECT session_key FROM lane_runs WHERE lane = $1 AND state = 'queued')
   ORDER BY r.session_key, level, r.id),
pick AS (
  SELECT h.id FROM heads h
   WHERE h.lane = $1
     AND ${RUNNABLE("h", "$5", "$6")}
   ORDER BY h.level, h.id
   LIMIT (SELECT free FROM cap))
UPDATE lane_runs SET state = 'active', fence = nextval('fence_seq'), started_at = clock_timestamp(),
       lease_until = ${GRANT_LEASE("$5", "$3", "$7")}
 WHERE id IN (SELECT id FROM pick)
RETURNING id, owner, local_id, fence, session_key`;

/**
 * The claim the lanes run, with the ends of the lane's runs and the lane's lock, in one statement: the
 * function claim_quick (migration 16, src/adapters/postgres/claim-walk-function.ts) chooses as CLAIM
 * does, walking the lane's priority classes only as far as its free slots take it (`proven` is always
 * true, and `$7`, the class window of the function before migration 16, is no longer read). `$1`: the
 * key of the lane's advisory lock; `$2`, `$3`: the ended runs' rows and tokens; `$4`: the lane; `$5`:
 * its capacity when none is stored; `$6`: the aging period (ms); `$8`: the lease (ms); `$9`, `$10`:
 * this process and how far ahead another's renewal must reach (RUNNABLE); `$11`: the lease of a grant
 * to another (GRANT_LEASE); `$12`: the channel name up to the process id (grantChannel).
 */
export const CLAIM_QUICK_CALL = `SELECT told, proven, id, owner, local_id, fence, session_key
  FROM claim_quick($1, $2::bigint[], $3::bigint[], $4, $5, $6, $7, $8, $9, $10, $11, $12)`;

/**
 * CLAIM_QUICK_CALL with the lane's new waiting rows written first, under the same lock (function
 * enqueue_claim, migration 14): `$13`, `$14`, `$15`: their sessions, priorities and local ids, in call
 * order. `new_ids`: their row ids, in that order.
 */
export const ENQUEUE_CLAIM_CALL = `SELECT told, proven, id, owner, local_id, fence, session_key, new_ids
  FROM enqueue_claim($1, $2::bigint[], $3::bigint[], $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::text[],
                     $14::smallint[], $15::bigint[])`;

/** Wakes the processes whose tasks a claim granted (delivered when the claim commits). */
export const NOTIFY_OWNERS = "SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c";

/** A run ends: only its holder, with its token, can end it. */
export const COMPLETE = "DELETE FROM lane_runs WHERE id = $1 AND fence = $2 RETURNING lane";

/** Drops a waiting row (aborted or cleared before it started). */
export const DEQUEUE = "DELETE FROM lane_runs WHERE id = ANY($1::bigint[]) AND state = 'queued' RETURNING id";

/** This process's grants: what it must start (after a wake-up) or still holds (after a renewal). */
export const MY_GRANTS = `
SELECT id, local_id, fence, session_key, extract(epoch FROM lease_until - clock_timestamp()) * 1000 AS remaining
  FROM lane_runs WHERE owner = $1 AND state = 'active'`;

/**
 * Heartbeat: the process stays alive and renews the leases it still holds (lost ones are missing),
 * only of the rows of tasks that still run or wait here ($4): the row of a run that ended, whose
 * return failed (the database was away), is left to run out and be reaped, never kept alive.
 */
export const HEARTBEAT = `
WITH alive AS (
  INSERT INTO processes (process_id, alive_until, info)
  VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond', $3)
  ON CONFLICT (process_id) DO UPDATE SET alive_until = excluded.alive_until)
UPDATE lane_runs SET lease_until = clock_timestamp() + $2 * interval '1 millisecond'
 WHERE owner = $1 AND state = 'active' AND lease_until > clock_timestamp() AND id = ANY($4::bigint[])
RETURNING id, fence, local_id, session_key`;

/**
 * The reaper (any process, any time, idempotent): drops runs whose lease ran out (their sessions and
 * slots are free again), waiting rows of processes no longer alive, and those processes.
 */
export const REAP = `
WITH expired AS (
  DELETE FROM lane_runs WHERE state = 'active' AND lease_until < clock_timestamp()
  RETURNING id, lane, session_key, owner, fence),
orphans AS (
  DELETE FROM lane_runs q WHERE q.state = 'queued'
     AND NOT EXISTS (SELECT 1 FROM processes p WHERE p.process_id = q.owner AND p.alive_until >= clock_timestamp())
  RETURNING id, lane),
dead AS (DELETE FROM processes WHERE alive_until < clock_timestamp() - interval '1 minute' RETURNING process_id)
SELECT 'expired' AS kind, id, lane, session_key, owner, fence FROM expired
UNION ALL SELECT 'orphan', id, lane, NULL, NULL, NULL FROM orphans`;

/** Lanes where anything waits, and each lane's numbers for snapshot(). */
export const LANE_COUNTS = `
SELECT l.lane, coalesce(c.capacity, -1) AS capacity,
       count(r.id) FILTER (WHERE r.state = 'active') AS active,
       count(r.id) FILTER (WHERE r.state = 'queued') AS queued
  FROM (SELECT lane FROM lane_capacity UNION SELECT DISTINCT lane FROM lane_runs) l
  LEFT JOIN lane_capacity c ON c.lane = l.lane
  LEFT JOIN lane_runs r ON r.lane = l.lane
 GROUP BY l.lane, c.capacity`;

export const SET_CAPACITY = `
INSERT INTO lane_capacity (lane, capacity) VALUES ($1, $2)
ON CONFLICT (lane) DO UPDATE SET capacity = excluded.capacity`;

/** A process that stops leaves nothing behind: its rows, then itself. */
export const LEAVE = `
WITH runs AS (DELETE FROM lane_runs WHERE owner = $1 RETURNING lane)
DELETE FROM processes WHERE process_id = $1`;

/**
 * Where waiting rows stand, for `lane.waitExceeded`: per row, whether its session has another row
 * running (it waits for the session) and how many rows of its lane are ahead of it and behind it by
 * priority level then enqueue order, and how many run in its lane. `$1`: row ids; `$2`: the aging period.
 */
export const WAIT_POSITIONS = `
WITH lanes AS (SELECT DISTINCT lane FROM lane_runs WHERE id = ANY($1::bigint[])),
queued AS (
  SELECT r.id, r.lane, r.session_key, ${LEVEL("$2::float8")} AS level FROM lane_runs r
   WHERE r.state = 'queued' AND r.lane IN (SELECT lane FROM lanes)),
ranked AS (
  SELECT q.*, row_number() OVER (PARTITION BY q.lane ORDER BY q.level, q.id) - 1 AS ahead,
         count(*) OVER (PARTITION BY q.lane) AS total FROM queued q)
SELECT k.id, k.ahead, k.total - k.ahead - 1 AS behind,
       (SELECT count(*) FROM lane_runs a WHERE a.lane = k.lane AND a.state = 'active') AS active_now,
       EXISTS (SELECT 1 FROM lane_runs a WHERE a.session_key = k.session_key AND a.state = 'active') AS session_busy
  FROM ranked k WHERE k.id = ANY($1::bigint[])`;

/** The tasks running in lanes `$1` (text[]), all processes together. */
export const ACTIVE_IN =
  "SELECT count(*)::int AS n FROM lane_runs WHERE state = 'active' AND lane = ANY($1::text[])";
