import { GRANT_LEASE, LEVEL, RUNNABLE } from "./claim-sql.js";

// The claim of a capacity group (several lanes sharing one budget), run under the group's lock
// (LOCK_GROUP) so the group's cap holds across processes. Names are unqualified: the connections'
// search_path is the adapter's schema.

/** Serializes the claims of every lane of one group cluster-wide: what makes the group's cap exact. */
export const LOCK_GROUP = "SELECT pg_advisory_xact_lock(hashtext($1))";

/**
 * Grants free slots of the group's lanes `$1` (with their capacities `$2` when none is stored), at most
 * the group's capacity `$5` minus its active rows in all. A session's head is its best waiting row in
 * any lane (as CLAIM); heads of the group's lanes that may start go by priority level (aged, `$4` ms),
 * then enqueue order, across the lanes, each lane taking no more than its own free slots. Each grant
 * takes a new fencing token and a lease (GRANT_LEASE: `$3` ms, `$8` for another process). `$6`, `$7`:
 * this process and how far ahead another's renewal must reach (RUNNABLE). It reads every waiting row
 * of the group's lanes (there is no quick path: groups hold background work, whose queues stay short).
 */
export const CLAIM_GROUP = `
WITH members AS (SELECT m.lane, m.dflt FROM unnest($1::text[], $2::int[]) AS m(lane, dflt)),
lane_free AS (
  SELECT m.lane, coalesce(c.capacity, m.dflt)
         - (SELECT count(*) FROM lane_runs a WHERE a.lane = m.lane AND a.state = 'active') AS free
    FROM members m LEFT JOIN lane_capacity c ON c.lane = m.lane),
group_free AS (
  SELECT greatest($5::int - (SELECT count(*) FROM lane_runs WHERE lane = ANY($1::text[]) AND state = 'active'), 0)
         AS free),
heads AS (
  SELECT DISTINCT ON (r.session_key) r.id, r.lane, r.session_key, r.owner, ${LEVEL("$4::float8")} AS level
    FROM lane_runs r
   WHERE r.state = 'queued'
     AND r.session_key IN (SELECT session_key FROM lane_runs WHERE lane = ANY($1::text[]) AND state = 'queued')
   ORDER BY r.session_key, level, r.id),
ranked AS (
  SELECT h.id, h.lane, h.level, row_number() OVER (PARTITION BY h.lane ORDER BY h.level, h.id) AS n
    FROM heads h
   WHERE h.lane = ANY($1::text[]) AND ${RUNNABLE("h", "$6", "$7")}),
pick AS (
  SELECT k.id FROM ranked k JOIN lane_free f ON f.lane = k.lane
   WHERE k.n <= f.free
   ORDER BY k.level, k.id
   LIMIT (SELECT free FROM group_free))
UPDATE lane_runs SET state = 'active', fence = nextval('fence_seq'), started_at = clock_timestamp(),
       lease_until = ${GRANT_LEASE("$6", "$3", "$8")}
 WHERE id IN (SELECT id FROM pick)
RETURNING id, owner, local_id, fence, session_key`;
