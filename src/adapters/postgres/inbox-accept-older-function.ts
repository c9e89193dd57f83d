import type { Migration } from "./migrations.js";

/**
 * Migration 15: `inbox_accept_older`, the inbox accept (`inbox_accept`, migration 12) that also names
 * the session's older messages still waiting, up to 32 (NULL past that). The receiving process knows
 * which of them it accepted itself and applies in order before this one: when they are all its own,
 * it applies the new message as accepted, without reading the inbox back. The names are read after
 * the accept, still under the session's lock (no other accept of the session commits meanwhile).
 * Released migrations never change: a new version of the function comes as a new migration.
 */
export const INBOX_ACCEPT_OLDER_FUNCTION: Migration = {
  version: 15,
  name: "the inbox accept names the older messages waiting",
  sql: `
CREATE FUNCTION inbox_accept_older(text, text, text, jsonb, text, double precision, text, text, text)
RETURNS TABLE (id bigint, owner text, live boolean, fence bigint, woken bigint, older integer,
               older_ids bigint[])
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT a.id, a.owner, a.live, a.fence, a.woken, a.older,
         CASE WHEN a.id IS NOT NULL AND a.older BETWEEN 1 AND 32 THEN
           ARRAY(SELECT i.id FROM inbox i
                  WHERE i.session_key = $1 AND i.taken_at IS NULL AND i.id < a.id ORDER BY i.id)
         END
    FROM inbox_accept($1, $2, $3, $4, $5, $6, $7, $8, $9) a;
END
$fn$;`,
};
