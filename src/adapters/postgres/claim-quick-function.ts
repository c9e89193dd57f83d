// The cluster lanes' quick claim as a function (migration 11). Called by a named prepared statement in
// autocommit (one statement, one transaction), it keeps the claim's single round trip while the
// statements inside are planned once per connection and their plans kept (PL/pgSQL caches them),
// instead of planning the whole claim again on every call. Names are unqualified: they resolve
// through the calling connection's search_path (the adapter's schema), as every statement's do.
// Released migrations never change: a new version of the function comes as a new migration (migration
// 16, claim-walk-function.ts, replaced this body with a walk).

/** The function's name, parameters, answer and language: every version of its body has the same. */
export const CLAIM_QUICK_HEAD = `claim_quick(
  p_lock text, p_end_ids bigint[], p_end_fences bigint[], p_lane text, p_capacity integer,
  p_aging float8, p_window integer, p_lease float8, p_self text, p_ahead float8, p_other float8,
  p_channel text)
RETURNS TABLE (told bigint, proven boolean, id bigint, owner text, local_id bigint, fence bigint,
               session_key text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column`;

/** The body's first steps in every version: the lane's lock, then the ended runs' rows go. */
export const LOCK_AND_END_RUNS = `  PERFORM pg_advisory_xact_lock(hashtext(p_lock));
  IF cardinality(p_end_ids) > 0 THEN
    DELETE FROM lane_runs r USING unnest(p_end_ids, p_end_fences) AS e(id, fence)
     WHERE r.id = e.id AND r.fence = e.fence;
  END IF;`;

/**
 * `claim_quick`: under the lane's advisory lock (`p_lock`), deletes the rows of runs of the lane that
 * ended (`p_end_ids`, `p_end_fences`: a row goes only with the token that held it), so their slots are
 * counted free, then runs the quick claim (see ClusterDb.claim): only the oldest `p_window` waiting
 * rows of each priority class of lane `p_lane` are candidates, checked as the full claim checks heads
 * (the session's best waiting row in any lane, no run of the session active, its process alive and,
 * for another process, renewing more than `p_ahead` ms ahead). Within a class a row's aged level
 * (one level per `p_aging` ms waited; 0: none) never beats an older row's, so the class's later rows
 * rank after its last candidate: the choice is proven the lane's best when no class's window was full,
 * or when it fills every free slot with rows ranking before the last candidate of every full one.
 * Proven, the rows are granted (a new token each; a lease of `p_lease` ms, or for another process
 * `p_other` ms after its last renewal) and every other process granted to is woken on its channel
 * (`p_channel` || its id) with its grants in the payload (sent empty when too long); else nothing is
 * granted and the caller runs the full claim. Answers one row with `proven` and no grant, or one per
 * grant. `p_capacity`: the lane's capacity when none is stored.
 */
export const CLAIM_QUICK_FUNCTION = `
CREATE FUNCTION ${CLAIM_QUICK_HEAD}
BEGIN
${LOCK_AND_END_RUNS}
  RETURN QUERY
  WITH cap AS (
    SELECT greatest(coalesce((SELECT capacity FROM lane_capacity WHERE lane = p_lane), p_capacity)
                    - (SELECT count(*) FROM lane_runs WHERE lane = p_lane AND state = 'active'), 0) AS free),
  cand AS ((SELECT id, session_key, owner, priority, enqueued_at FROM lane_runs
       WHERE lane = p_lane AND state = 'queued' AND priority = 0 ORDER BY id LIMIT p_window) UNION ALL (SELECT id, session_key, owner, priority, enqueued_at FROM lane_runs
       WHERE lane = p_lane AND state = 'queued' AND priority = 1 ORDER BY id LIMIT p_window) UNION ALL (SELECT id, session_key, owner, priority, enqueued_at FROM lane_runs
       WHERE lane = p_lane AND state = 'queued' AND priority = 2 ORDER BY id LIMIT p_window)),
  leveled AS (SELECT c.id, c.session_key, c.owner, c.priority, CASE WHEN p_aging > 0
     THEN greatest(0, c.priority - floor(extract(epoch FROM clock_timestamp() - c.enqueued_at) * 1000 / p_aging))
     ELSE c.priority END AS level FROM cand c),
  eligible AS (
    SELECT l.id, l.level FROM leveled l
     WHERE NOT EXISTS (SELECT 1 FROM lane_runs o
                        WHERE o.session_key = l.session_key AND o.state = 'queued' AND o.id <> l.id
                          AND (CASE WHEN p_aging > 0
     THEN greatest(0, o.priority - floor(extract(epoch FROM clock_timestamp() - o.enqueued_at) * 1000 / p_aging))
     ELSE o.priority END, o.id) < (l.level, l.id))
       AND NOT EXISTS (SELECT 1 FROM lane_runs a
                    WHERE a.session_key = l.session_key AND a.state = 'active')
       AND EXISTS (SELECT 1 FROM processes p WHERE p.process_id = l.owner
                    AND p.alive_until > clock_timestamp()
                        + CASE WHEN p.process_id = p_self THEN 0 ELSE p_ahead END * interval '1 millisecond')
     ORDER BY l.level, l.id
     LIMIT (SELECT free FROM cap)),
  full_edges AS (
    SELECT level, id FROM (
      SELECT DISTINCT ON (priority) priority, level, id, count(*) OVER (PARTITION BY priority) AS n
        FROM leveled ORDER BY priority, id DESC) edges
     WHERE n >= p_window),
  last AS (SELECT level, id FROM eligible ORDER BY level DESC, id DESC LIMIT 1),
  decision AS (
    SELECT (SELECT free FROM cap) = 0
        OR NOT EXISTS (SELECT 1 FROM full_edges)
        OR ((SELECT count(*) FROM eligible) >= (SELECT free FROM cap)
            AND NOT EXISTS (SELECT 1 FROM full_edges e, last l WHERE (l.level, l.id) >= (e.level, e.id)))
         AS proven),
  granted AS (
    UPDATE lane_runs SET state = 'active', fence = nextval('fence_seq'), started_at = clock_timestamp(),
           lease_until = CASE WHEN owner = p_self
      THEN clock_timestamp() + p_lease * interval '1 millisecond'
      ELSE least(clock_timestamp() + p_lease * interval '1 millisecond',
                 (SELECT p.alive_until FROM processes p WHERE p.process_id = owner)
                 + (p_other - p_lease) * interval '1 millisecond') END
     WHERE id IN (SELECT id FROM eligible) AND state = 'queued' AND (SELECT proven FROM decision)
    RETURNING id, owner, local_id, fence, session_key),
  told AS (
    SELECT pg_notify(p_channel || t.owner, CASE WHEN length(t.grants) < 7000 THEN t.grants ELSE '' END)
      FROM (SELECT owner, json_agg(json_build_array(id::text, local_id::text, fence::text))::text AS grants
              FROM granted WHERE owner <> p_self GROUP BY owner) t)
  SELECT (SELECT count(*) FROM told) AS told, d.proven, g.id, g.owner, g.local_id, g.fence, g.session_key FROM decision d LEFT JOIN granted g ON true;
END
$fn$;`;
