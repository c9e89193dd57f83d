import type pg from "pg";
import type { TranscriptHead, TranscriptRecord } from "../../ports/store.js";
import { UNDELIVERED_FINAL } from "../../ports/store.js";
import type { StampedRecord } from "../jsonl/transcript-log.js";
import { fenceHolds } from "./fences.js";

/** The columns of stamped records, as the arrays `unnest` takes (parameters `$first` … `$first + 5`). */
export function recordColumns(stamped: readonly StampedRecord[]): unknown[] {
  const rows = stamped.map(({ record }) => record);
  return [
    rows.map((r) => r.seq),
    rows.map((r) => r.id),
    rows.map((r) => r.revision),
    rows.map((r) => r.role),
    rows.map(markedSeq),
    stamped.map(({ json }) => json),
  ];
}

/** Inserts the records of `recordColumns` given from parameter `$first` on. */
const insertRecords = (first: number) => {
  const p = (n: number) => `$${first + n}`;
  return `INSERT INTO transcript (session_key, seq, record_id, revision, role, marks_seq, body)
  SELECT $1, u.* FROM unnest(${p(0)}::bigint[], ${p(1)}::text[], ${p(2)}::int[], ${p(3)}::text[],
                             ${p(4)}::bigint[], ${p(5)}::text[]) AS u`;
};

/**
 * An append in one statement (one round trip, one commit), for a writer that knows the session's head:
 * the session's row is locked, and only when it still is that head (session id, revision and last seq)
 * and the run's fencing token still holds its lease are the records inserted and the head moved on.
 * Otherwise nothing is written, and the caller takes the path that reads the head first.
 */
const APPEND_AT_HEAD = `
WITH h AS (
  SELECT s.session_id, s.revision, s.last_seq, ${fenceHolds("s.session_key", "$2")} AS fence_ok
    FROM sessions s WHERE s.session_key = $1 FOR UPDATE),
ok AS (SELECT 1 FROM h WHERE h.session_id = $3 AND h.revision = $4 AND h.last_seq = $5 AND h.fence_ok),
ins AS (${insertRecords(7)} WHERE EXISTS (SELECT 1 FROM ok)),
moved AS (UPDATE sessions SET last_seq = $6 WHERE session_key = $1 AND EXISTS (SELECT 1 FROM ok) RETURNING 1)
SELECT EXISTS (SELECT 1 FROM moved) AS done`;

/**
 * Appends `stamped` (stamped from `head`) in one statement when `head` is still the session's head;
 * false when it is not (or the token lost its lease): nothing was written.
 */
export async function appendAtHead(
  pool: pg.Pool,
  session: string,
  fence: number | null,
  head: TranscriptHead,
  stamped: readonly StampedRecord[],
): Promise<boolean> {
  const { rows } = await pool.query<{ done: boolean }>({
    // Prepared once per connection: the planner does not run on every append.
    name: "tiller.appendAtHead",
    text: APPEND_AT_HEAD,
    values: [
      session,
      fence,
      head.sessionId,
      head.revision,
      head.lastSeq,
      head.lastSeq + stamped.length,
      ...recordColumns(stamped),
    ],
  });
  return rows[0]?.done === true;
}

/** Appends `stamped` (stamped from `head`) in a transaction that holds the session's row lock. */
export async function appendLocked(
  client: pg.ClientBase,
  session: string,
  head: TranscriptHead,
  stamped: readonly StampedRecord[],
): Promise<void> {
  await client.query(
    `WITH ins AS (${insertRecords(3)})
     UPDATE sessions SET last_seq = $2 WHERE session_key = $1`,
    [session, head.lastSeq + stamped.length, ...recordColumns(stamped)],
  );
}

/** The seq of the final an undelivered-final marker marks: details.finalSeq, else the record before. */
function markedSeq(record: TranscriptRecord): number | null {
  if (record.role !== "custom" || record.customType !== UNDELIVERED_FINAL) return null;
  const named = record.details?.finalSeq;
  return typeof named === "number" && Number.isInteger(named) && named < record.seq ? named : record.seq - 1;
}
