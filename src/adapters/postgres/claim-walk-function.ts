import { CLAIM_QUICK_HEAD, LOCK_AND_END_RUNS } from "./claim-quick-function.js";
import type { Migration } from "./migrations.js";

/** A waiting row's aged level at the walk's instant `v_now` (as LEVEL in claim-sql.ts reads it). */
const level = (priority: string, enqueuedAt: string) => `CASE WHEN p_aging > 0
            THEN greatest(0, ${priority} - floor(extract(epoch FROM v_now - ${enqueuedAt}) * 1000 / p_aging))
            ELSE ${priority} END`;

/** The cursor over class `k`'s waiting rows of the lane, oldest first. */
const classCursor = (
  k: number,
) => `c${k} CURSOR FOR SELECT q.id, q.session_key, q.owner, q.priority, q.enqueued_at
     FROM lane_runs q WHERE q.lane = p_lane AND q.state = 'queued' AND q.priority = ${k} ORDER BY q.id;`;

/**
 * Migration 16: `claim_quick` (migration 11) as a walk. The set-based quick claim checked every one
 * of the oldest `p_window` waiting rows of each priority class (three correlated lookups a row), then
 * proved or gave up on its choice; with a few dozen sessions waiting, that work was most of a claim's
 * cost, and a long queue fell back to the full pass. The walk reads the lane's three classes as
 * cursors in id order, which within a class is also (aged level, id) order (an older row never has
 * a higher level), and merges them: the next row in the full claim's order is always the smallest
 * head, checked as CLAIM checks it (the session's best waiting row in any lane, no run of the
 * session active, its process alive and, for another process, renewing more than `p_ahead` ms
 * ahead). It stops at the lane's last free slot, so a claim costs the rows it grants and the rows it
 * passes over, whatever waits behind them, and its choice is always CLAIM's (`proven` is always
 * true; `p_window` is no longer read). Grants, leases and wake-ups are as before. `enqueue_claim`
 * (migration 14) calls this function by name, so it walks too.
 * Released migrations never change: a new version of the function comes as a new migration.
 */
export const CLAIM_WALK_FUNCTION: Migration = {
  version: 16,
  name: "the lanes' claim as a walk over the priority classes",
  sql: `
CREATE OR REPLACE FUNCTION ${CLAIM_QUICK_HEAD}
DECLARE
  v_free integer;
  v_now timestamptz;
  v_pick bigint[] := '{}';
  v_granted boolean := false;
  v_id bigint[] := ARRAY[NULL, NULL, NULL]::bigint[];
  v_level float8[] := ARRAY[0, 0, 0]::float8[];
  v_session text[] := ARRAY[NULL, NULL, NULL]::text[];
  v_owner text[] := ARRAY[NULL, NULL, NULL]::text[];
  v_k integer;
  v_need integer[] := ARRAY[1, 2, 3];
  v_row record;
  ${classCursor(0)}
  ${classCursor(1)}
  ${classCursor(2)}
BEGIN
${LOCK_AND_END_RUNS}
  v_free := greatest(coalesce((SELECT c.capacity FROM lane_capacity c WHERE c.lane = p_lane), p_capacity)
                     - (SELECT count(*) FROM lane_runs a WHERE a.lane = p_lane AND a.state = 'active'), 0);
  IF v_free > 0 THEN
    -- One clock for the whole walk: every row's level is read at the same instant.
    v_now := clock_timestamp();
    OPEN c0; OPEN c1; OPEN c2;
    -- The merge: read the head of each class that needs one, take the smallest (level, id) of the
    -- heads, check it; only its class moves on.
    LOOP
      FOREACH v_k IN ARRAY v_need LOOP
        IF v_k = 1 THEN FETCH c0 INTO v_row; ELSIF v_k = 2 THEN FETCH c1 INTO v_row; ELSE FETCH c2 INTO v_row; END IF;
        IF FOUND THEN
          v_id[v_k] := v_row.id; v_session[v_k] := v_row.session_key; v_owner[v_k] := v_row.owner;
          v_level[v_k] := ${level("v_row.priority", "v_row.enqueued_at")};
        ELSE
          v_id[v_k] := NULL;
        END IF;
      END LOOP;
      v_k := NULL;
      FOR i IN 1..3 LOOP
        IF v_id[i] IS NOT NULL AND (v_k IS NULL OR (v_level[i], v_id[i]) < (v_level[v_k], v_id[v_k])) THEN
          v_k := i;
        END IF;
      END LOOP;
      EXIT WHEN v_k IS NULL;
      IF NOT EXISTS (SELECT 1 FROM lane_runs o
                      WHERE o.session_key = v_session[v_k] AND o.state = 'queued' AND o.id <> v_id[v_k]
                        AND (${level("o.priority", "o.enqueued_at")}, o.id) < (v_level[v_k], v_id[v_k]))
         AND NOT EXISTS (SELECT 1 FROM lane_runs a WHERE a.session_key = v_session[v_k] AND a.state = 'active')
         AND EXISTS (SELECT 1 FROM processes p WHERE p.process_id = v_owner[v_k]
                      AND p.alive_until > v_now
                          + CASE WHEN p.process_id = p_self THEN 0 ELSE p_ahead END * interval '1 millisecond')
      THEN
        v_pick := v_pick || v_id[v_k];
        v_free := v_free - 1;
        EXIT WHEN v_free = 0;
      END IF;
      v_need := ARRAY[v_k];
    END LOOP;
    CLOSE c0; CLOSE c1; CLOSE c2;
  END IF;
  IF cardinality(v_pick) > 0 THEN
    RETURN QUERY
    WITH granted AS (
      UPDATE lane_runs g SET state = 'active', fence = nextval('fence_seq'), started_at = clock_timestamp(),
             lease_until = CASE WHEN g.owner = p_self
        THEN clock_timestamp() + p_lease * interval '1 millisecond'
        ELSE least(clock_timestamp() + p_lease * interval '1 millisecond',
                   (SELECT p.alive_until FROM processes p WHERE p.process_id = g.owner)
                   + (p_other - p_lease) * interval '1 millisecond') END
       WHERE g.id = ANY (v_pick) AND g.state = 'queued'
      RETURNING g.id, g.owner, g.local_id, g.fence, g.session_key),
    told AS (
      SELECT pg_notify(p_channel || t.owner, CASE WHEN length(t.grants) < 7000 THEN t.grants ELSE '' END)
        FROM (SELECT owner, json_agg(json_build_array(id::text, local_id::text, fence::text))::text AS grants
                FROM granted WHERE owner <> p_self GROUP BY owner) t)
    SELECT (SELECT count(*) FROM told), true, g.id, g.owner, g.local_id, g.fence, g.session_key FROM granted g;
    v_granted := FOUND;
  END IF;
  -- Nothing picked, or every picked row gone meanwhile (a waiting task taken back by its caller, or
  -- reaped: neither waits for the lane's lock): still one answer, proven, with no grant.
  IF NOT v_granted THEN
    RETURN QUERY SELECT 0::bigint, true, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint, NULL::text;
  END IF;
END
$fn$;`,
};
