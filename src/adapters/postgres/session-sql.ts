// The SQL of session ownership and the durable inbox (docs/postgres.md). Names are unqualified (the
// connections' search_path is the adapter's schema); `$lease` parameters are milliseconds. The
// statements run again and again are named: prepared once per connection, their plans kept.

import type { Named } from "./connection.js";

/** Serializes the accept, release and take-over of one session cluster-wide. */
export const LOCK_SESSION = "SELECT pg_advisory_xact_lock(hashtext($1))";

/**
 * The whole accept in one call (inbox_accept, migration 12): the session's lock, then the message into
 * the inbox unless its id is there (a duplicate), a live owner elsewhere woken, else this process's
 * ownership taken. Answers the inbox id, the owner as it was, whether it was live, the token taken and
 * how many older messages wait.
 */
export const ACCEPT: Named = {
  name: "tiller.inboxAcceptOlder",
  text: "SELECT id, owner, live, fence, older, older_ids FROM inbox_accept_older($1, $2, $3, $4, $5, $6, $7, $8, $9)",
};

export const OWNER_OF = `
SELECT owner, lease_until > clock_timestamp() AS live FROM session_owners WHERE session_key = $1`;

/** This process owns the session from now on: a new token when it was someone else's (or nobody's). */
export const TAKE_OWNER = `
INSERT INTO session_owners (session_key, owner, fence, lease_until)
VALUES ($1, $2, nextval('fence_seq'), clock_timestamp() + $3 * interval '1 millisecond')
ON CONFLICT (session_key) DO UPDATE SET
  fence = CASE WHEN session_owners.owner = excluded.owner THEN session_owners.fence ELSE excluded.fence END,
  owner = excluded.owner, lease_until = excluded.lease_until
RETURNING fence`;

/** Messages waiting for a session, only for its owner. */
export const WAITING: Named = {
  name: "tiller.inboxWaiting",
  text: `
SELECT i.id, i.message_id, i.mode, i.body, i.received_by FROM inbox i
 WHERE i.session_key = $1 AND i.taken_at IS NULL
   AND EXISTS (SELECT 1 FROM session_owners o WHERE o.session_key = $1 AND o.owner = $2)
 ORDER BY i.id`,
};

/**
 * The owner (`$3`) applied a batch of rows (ids `$1` and acks `$2` by place): each ack is recorded once,
 * and each row's receiver, if another process, is told at commit (`{"ack": id}` on its channel, `$4` ||
 * receiver), in the same round trip.
 */
export const APPLIED_ALL: Named = {
  name: "tiller.inboxAppliedAll",
  text: `
WITH v AS (SELECT * FROM unnest($1::bigint[], $2::jsonb[]) AS v(id, ack)),
u AS (
  UPDATE inbox i SET taken_by = $3, taken_at = clock_timestamp(), ack = v.ack
    FROM v WHERE i.id = v.id AND i.taken_at IS NULL RETURNING i.id, i.received_by)
SELECT count(*) AS told
  FROM (SELECT pg_notify($4 || received_by, json_build_object('ack', id::text)::text) FROM u
         WHERE received_by <> $3) n`,
};

export const FORGET: Named = {
  name: "tiller.inboxForget",
  text: "DELETE FROM inbox WHERE id = $1",
};

export const ACK_OF: Named = {
  name: "tiller.inboxAck",
  text: "SELECT ack, taken_by FROM inbox WHERE id = $1",
};

/**
 * In one call (session_release, migration 12), under the session's lock: this process gives the
 * session up unless messages wait for it (then it keeps it, to apply them first). Answers whether any
 * wait.
 */
export const RELEASE: Named = {
  name: "tiller.sessionRelease",
  text: "SELECT waiting FROM session_release($1, $2, $3)",
};

/** Renews this process's ownerships whose lease still runs; the ones missing were lost. */
export const RENEW: Named = {
  name: "tiller.ownersRenew",
  text: `
UPDATE session_owners SET lease_until = clock_timestamp() + $2 * interval '1 millisecond'
 WHERE owner = $1 AND lease_until > clock_timestamp() RETURNING session_key`,
};

/**
 * Renews one of this process's ownerships whose lease ran out (the database was away), only if nobody
 * took the session meanwhile: the row still names this process (`$2`) with its token (`$3`). A process
 * that took it, even one that gave it up since, changed or removed the row.
 */
export const RETAKE = `
UPDATE session_owners SET lease_until = clock_timestamp() + $4 * interval '1 millisecond'
 WHERE session_key = $1 AND owner = $2 AND fence = $3 RETURNING session_key`;

/** Sessions this process owns with messages waiting (a missed wake-up). */
export const OWN_WAITING: Named = {
  name: "tiller.ownWaiting",
  text: `
SELECT DISTINCT i.session_key FROM inbox i JOIN session_owners o ON o.session_key = i.session_key
 WHERE o.owner = $1 AND i.taken_at IS NULL`,
};

/**
 * Sessions with work and no live owner: messages waiting, or a saved turn or queue. A session with a
 * lane row is left alone (a turn nobody typed runs or waits there; a dead process's rows are reaped).
 * Whether a state holds work is its `has_work` column (migration 13), indexed for the few that do.
 */
export const ORPHANS: Named = {
  name: "tiller.orphans",
  text: `
SELECT c.session_key FROM (
  SELECT session_key FROM inbox WHERE taken_at IS NULL
  UNION
  SELECT session_key FROM session_state WHERE has_work) c
 WHERE NOT EXISTS (SELECT 1 FROM session_owners o
                    WHERE o.session_key = c.session_key AND o.lease_until > clock_timestamp())
   AND NOT EXISTS (SELECT 1 FROM lane_runs r WHERE r.session_key = c.session_key)
 LIMIT 20`,
};

/**
 * Where each of the given sessions is, cluster-wide: its live owner, the process and lane of its active
 * lane run, how many of its lane runs wait, and that lane's capacity.
 */
export const PLACEMENTS: Named = {
  name: "tiller.placements",
  text: `
SELECT s.key AS session_key, o.owner, a.owner AS running_on, coalesce(a.lane, q.lane) AS lane,
       coalesce(q.queued, 0)::int AS queued, c.capacity
  FROM unnest($1::text[]) AS s(key)
  LEFT JOIN session_owners o ON o.session_key = s.key AND o.lease_until > clock_timestamp()
  LEFT JOIN lane_runs a ON a.session_key = s.key AND a.state = 'active'
  LEFT JOIN (SELECT session_key, min(lane) AS lane, count(*) AS queued FROM lane_runs
              WHERE state = 'queued' AND session_key = ANY($1::text[]) GROUP BY session_key) q
    ON q.session_key = s.key
  LEFT JOIN lane_capacity c ON c.lane = coalesce(a.lane, q.lane)
 WHERE o.owner IS NOT NULL OR a.owner IS NOT NULL OR q.queued IS NOT NULL`,
};

/** Live owners of the given sessions. */
export const OWNERS: Named = {
  name: "tiller.owners",
  text: `
SELECT session_key, owner FROM session_owners
 WHERE session_key = ANY($1::text[]) AND lease_until > clock_timestamp()`,
};

/** Applied messages past the dedupe window go (a redelivery after it runs again, as in one process). */
export const PRUNE: Named = {
  name: "tiller.inboxPrune",
  text: `
DELETE FROM inbox WHERE taken_at IS NOT NULL AND taken_at < clock_timestamp() - $1 * interval '1 millisecond'`,
};

/** A process that stops gives its sessions up at once (their waiting messages go to whoever takes them). */
export const LEAVE = "DELETE FROM session_owners WHERE owner = $1";
