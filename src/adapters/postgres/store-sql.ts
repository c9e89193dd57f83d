// The PostgresStore's statements run on every turn or message, named: prepared once per connection,
// their plans kept (the store's pool plans generically, see GENERIC_PLANS).
import type { Named } from "./connection.js";

/**
 * A session's head, its row inserted first when absent: one statement. An existing row is read from
 * the statement's snapshot; a row another process inserted after it began (a conflict the snapshot
 * does not show) answers nothing, and the caller asks again.
 */
export const OPEN: Named = {
  name: "tiller.openSessionHead",
  text: `WITH ins AS (
  INSERT INTO sessions (session_key, session_id) VALUES ($1, $2) ON CONFLICT DO NOTHING
  RETURNING session_id, revision, last_seq)
SELECT session_id, revision, last_seq FROM ins
UNION ALL
SELECT session_id, revision, last_seq FROM sessions WHERE session_key = $1`,
};

export const READ: Named = {
  name: "tiller.readTranscript",
  text: "SELECT body FROM transcript WHERE session_key = $1 ORDER BY seq",
};

/** The window, plus each final whose undelivered marker is in the window while it is not. */
export const READ_WINDOW: Named = {
  name: "tiller.readWindow",
  text: `WITH s AS (SELECT window_after_seq AS w FROM sessions WHERE session_key = $1)
SELECT t.seq, t.body FROM transcript t, s WHERE t.session_key = $1 AND t.seq > s.w
UNION
SELECT f.seq, f.body FROM transcript m, s, transcript f
 WHERE m.session_key = $1 AND m.seq > s.w AND m.marks_seq IS NOT NULL AND m.marks_seq <= s.w
   AND f.session_key = $1 AND f.seq = m.marks_seq AND f.role = 'assistant'
ORDER BY seq`,
};

export const LOAD_STATE: Named = {
  name: "tiller.loadState",
  text: "SELECT state FROM session_state WHERE session_key = $1",
};

/**
 * A message id claimed for a session unless seen within the window (`$4`, ms); the session's ids older
 * than the window go on the way (its rows stay few).
 */
export const CLAIM_MESSAGE_ID: Named = {
  name: "tiller.claimMessageId",
  text: `WITH gone AS (DELETE FROM dedupe_windows
                WHERE session_key = $1 AND message_id <> $2 AND seen_at < to_timestamp($4::float8 / 1000))
INSERT INTO dedupe_windows (session_key, message_id, seen_at) VALUES ($1, $2, to_timestamp($3::float8 / 1000))
ON CONFLICT (session_key, message_id) DO UPDATE SET seen_at = excluded.seen_at
 WHERE dedupe_windows.seen_at < to_timestamp($4::float8 / 1000)
RETURNING 1`,
};

export const RELEASE_MESSAGE_ID: Named = {
  name: "tiller.releaseMessageId",
  text: "DELETE FROM dedupe_windows WHERE session_key = $1 AND message_id = $2",
};
