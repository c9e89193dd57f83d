import type { Migration } from "./migrations.js";

/**
 * Migration 14: `enqueue_claim`, the lanes' quick claim (`claim_quick`, migration 11) with the lane's
 * new waiting rows written first, in the same statement. A turn's lane row was an INSERT of its own
 * and then a claim pass: two round trips and two commits where one does. The new rows go in under
 * the lane's lock, in call order (their ids keep the lane's first-come order), and are candidates of
 * the claim that follows: a row enqueued on a free lane is granted in the round trip that wrote it.
 * `new_ids` answers each new row's id, in the order of `p_local_ids`, on every row of the answer.
 * Released migrations never change: a new version of the function comes as a new migration.
 */
export const ENQUEUE_CLAIM_FUNCTION: Migration = {
  version: 14,
  name: "the lanes' enqueue folded into the quick claim",
  sql: `
CREATE FUNCTION enqueue_claim(
  p_lock text, p_end_ids bigint[], p_end_fences bigint[], p_lane text, p_capacity integer,
  p_aging float8, p_window integer, p_lease float8, p_self text, p_ahead float8, p_other float8,
  p_channel text, p_sessions text[], p_priorities smallint[], p_local_ids bigint[])
RETURNS TABLE (told bigint, proven boolean, id bigint, owner text, local_id bigint, fence bigint,
               session_key text, new_ids bigint[])
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_new bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_lock));
  WITH ins AS (
    INSERT INTO lane_runs (lane, session_key, priority, state, owner, local_id)
    SELECT p_lane, u.session_key, u.priority, 'queued', p_self, u.local_id
      FROM unnest(p_sessions, p_priorities, p_local_ids) WITH ORDINALITY AS u(session_key, priority, local_id, ord)
     ORDER BY u.ord
    RETURNING id, local_id)
  SELECT array_agg(ins.id ORDER BY u.ord) INTO v_new
    FROM unnest(p_local_ids) WITH ORDINALITY AS u(local_id, ord) JOIN ins ON ins.local_id = u.local_id;
  RETURN QUERY SELECT c.told, c.proven, c.id, c.owner, c.local_id, c.fence, c.session_key, v_new
    FROM claim_quick(p_lock, p_end_ids, p_end_fences, p_lane, p_capacity, p_aging, p_window, p_lease,
                     p_self, p_ahead, p_other, p_channel) c;
END
$fn$;`,
};
