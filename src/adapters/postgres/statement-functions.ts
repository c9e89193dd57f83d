import type { Migration } from "./migrations.js";

/**
 * Migration 12: the writes that take a lock first and then one statement (the inbox accept, a session's
 * release, a web delivery), as functions. Each is called by a named prepared statement in autocommit,
 * so a call is one round trip and one transaction, as the `BEGIN; …; COMMIT` messages it replaces
 * were: the advisory lock holds to its commit, a NOTIFY is sent at it, and each statement of the body
 * takes a new snapshot (it sees what committed while the one before waited). Unlike those messages,
 * whose literals made every call a new statement to plan, a function's plans are kept per connection.
 * Parameters are positional (`$n`): their names would clash with the tables' columns.
 */
export const STATEMENT_FUNCTIONS: Migration = {
  version: 12,
  name: "inbox accept, session release and web delivery as functions",
  sql: `
-- $1 session, $2 message id, $3 mode, $4 body, $5 this process, $6 lease (ms), $7 the inbox channels'
-- prefix, $8 the wake-up payload, $9 the session's lock key. After the session's lock: the message
-- goes into the inbox unless its id is there (a duplicate: nothing else happens); then a live owner
-- elsewhere is woken (its channel $7 || owner), else this process owns the session from now on (a new
-- token when it was someone else's). Answers the inbox id, the owner as it was, whether it was live,
-- the token taken and how many older messages of the session wait (the statement does not see its own
-- insert).
CREATE FUNCTION inbox_accept(text, text, text, jsonb, text, double precision, text, text, text)
RETURNS TABLE (id bigint, owner text, live boolean, fence bigint, woken bigint, older integer)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext($9));
  RETURN QUERY
  WITH ins AS (
    INSERT INTO inbox (session_key, message_id, mode, body, received_by) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (session_key, message_id) DO NOTHING RETURNING id),
  o AS (SELECT owner, lease_until > clock_timestamp() AS live FROM session_owners WHERE session_key = $1),
  elsewhere AS (SELECT owner FROM o WHERE live AND owner <> $5),
  woken AS (SELECT pg_notify($7 || e.owner, $8) FROM elsewhere e WHERE EXISTS (SELECT 1 FROM ins)),
  taken AS (
    INSERT INTO session_owners (session_key, owner, fence, lease_until)
    SELECT $1, $5, nextval('fence_seq'), clock_timestamp() + $6 * interval '1 millisecond'
     WHERE EXISTS (SELECT 1 FROM ins) AND NOT EXISTS (SELECT 1 FROM elsewhere)
    ON CONFLICT (session_key) DO UPDATE SET
      fence = CASE WHEN session_owners.owner = excluded.owner THEN session_owners.fence ELSE excluded.fence END,
      owner = excluded.owner, lease_until = excluded.lease_until
    RETURNING fence)
  SELECT (SELECT id FROM ins), (SELECT owner FROM o), (SELECT live FROM o), (SELECT fence FROM taken),
         (SELECT count(*) FROM woken),
         (SELECT count(*) FROM inbox WHERE session_key = $1 AND taken_at IS NULL)::int;
END
$fn$;

-- $1 session, $2 this process, $3 the session's lock key. After the session's lock: this process gives
-- the session up unless messages wait for it (then it keeps it, to apply them first). Answers whether
-- any wait.
CREATE FUNCTION session_release(text, text, text) RETURNS TABLE (waiting boolean)
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext($3));
  RETURN QUERY
  WITH w AS (SELECT 1 FROM inbox WHERE session_key = $1 AND taken_at IS NULL LIMIT 1),
  d AS (DELETE FROM session_owners WHERE session_key = $1 AND owner = $2 AND NOT EXISTS (SELECT 1 FROM w))
  SELECT EXISTS (SELECT 1 FROM w);
END
$fn$;

-- $1 session, $2 delivery id, $3 the message id's random part, $4 kind, $5 text, $6 run id, $7 at (ms),
-- $8 rows kept (NULL: all), $9 appends between prunes, $10 the deliveries channel, $11 its payload.
-- Taking the session's head row locks it until commit (appends of one session, from any process,
-- follow one another: seq is gap-free). Then, in a statement of its own (it reads what committed
-- while the head row was waited for): a delivery id already stored for the session answers the stored
-- row, stores nothing and gives the seq back; else the row is inserted with the new seq (its message id
-- "<seq>-$3"), every $9 appends the rows older than the newest $8 go (at most 1000 at once: a backlog
-- drains over the next prunes; seq is never renumbered), and the channel is told the session at commit.
CREATE FUNCTION web_delivery_store(text, text, text, text, text, text, double precision, bigint, bigint,
                                   text, text)
RETURNS TABLE (message_id text, kind text, text text, run_id text, delivery_id text,
               at_ms double precision, woken bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  INSERT INTO web_delivery_heads (session_key, last_seq) VALUES ($1, 1)
  ON CONFLICT (session_key) DO UPDATE SET last_seq = web_delivery_heads.last_seq + 1;
  RETURN QUERY
  WITH known AS (
    SELECT message_id, kind, text, run_id, delivery_id, at_ms FROM web_deliveries
     WHERE session_key = $1 AND delivery_id = $2),
  head AS (SELECT last_seq FROM web_delivery_heads WHERE session_key = $1),
  ins AS (
    INSERT INTO web_deliveries (session_key, seq, message_id, delivery_id, kind, text, run_id, at_ms)
    SELECT $1, h.last_seq, h.last_seq::text || '-' || $3, $2, $4, $5, $6, $7
      FROM head h WHERE NOT EXISTS (SELECT 1 FROM known)
    RETURNING seq, message_id, kind, text, run_id, delivery_id, at_ms),
  back AS (UPDATE web_delivery_heads SET last_seq = last_seq - 1
            WHERE session_key = $1 AND EXISTS (SELECT 1 FROM known)),
  pruned AS (DELETE FROM web_deliveries WHERE session_key = $1 AND seq IN (
    SELECT d.seq FROM web_deliveries d, ins
     WHERE d.session_key = $1 AND ins.seq % $9 = 0 AND ins.seq > $8 AND d.seq <= ins.seq - $8
     ORDER BY d.seq LIMIT 1000)),
  woken AS (SELECT pg_notify($10, $11) FROM ins)
  SELECT r.*, (SELECT count(*) FROM woken)
    FROM (SELECT message_id, kind, text, run_id, delivery_id, at_ms FROM known
          UNION ALL SELECT message_id, kind, text, run_id, delivery_id, at_ms FROM ins) r;
END
$fn$;`,
};
