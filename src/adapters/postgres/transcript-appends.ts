import type { TranscriptHead } from "../../ports/store.js";
import type { StampedRecord } from "../jsonl/transcript-log.js";
import { recordColumns } from "./append-at-head.js";
import { fenceHolds } from "./fences.js";

/** One session's append at the head this process knows: the records stamped from it, and the run's token. */
export interface HeadAppend {
  session: string;
  /** The run's lane token, or null. */
  fence: number | null;
  head: TranscriptHead;
  stamped: readonly StampedRecord[];
}

/**
 * The appends of a batch as common table expressions, from parameter `$first` on (thirteen arrays).
 * The sessions' rows are locked in the batch's order, which the caller sorts by key (every batch locks
 * in one order: no deadlock), each by its key: a lookup per session, whatever size the plan guesses for
 * the batch (a join would read the whole table under the generic plan). A session's records are
 * inserted, and its head moved on, only when its row still is the head its writer knows and its run's
 * token still holds the lease. `a_moved` answers the places in the batch (`ord`, 1-based) of the
 * appends that went through; the others wrote nothing.
 */
export function appendCtes(first: number): string {
  const p = (n: number) => `$${first + n}`;
  return `a_v AS (
  SELECT * FROM unnest(${p(0)}::text[], ${p(1)}::bigint[], ${p(2)}::text[], ${p(3)}::int[], ${p(4)}::bigint[], ${p(5)}::bigint[])
    WITH ORDINALITY AS v(session_key, fence, session_id, revision, last_seq, new_seq, ord)),
a_h AS (
  SELECT v.ord, v.session_key, v.fence, v.session_id, v.revision, v.last_seq, v.new_seq,
         s.session_id AS head_id, s.revision AS head_revision, s.last_seq AS head_seq
    FROM a_v v, LATERAL (SELECT session_id, revision, last_seq FROM sessions s
                          WHERE s.session_key = v.session_key FOR UPDATE) s),
a_ok AS (
  SELECT h.ord, h.session_key, h.new_seq FROM a_h h
   WHERE h.head_id = h.session_id AND h.head_revision = h.revision AND h.head_seq = h.last_seq
     AND ${fenceHolds("h.session_key", "h.fence")}),
a_ins AS (
  INSERT INTO transcript (session_key, seq, record_id, revision, role, marks_seq, body)
  SELECT ok.session_key, u.seq, u.record_id, u.revision, u.role, u.marks_seq, u.body
    FROM unnest(${p(6)}::bigint[], ${p(7)}::bigint[], ${p(8)}::text[], ${p(9)}::int[], ${p(10)}::text[], ${p(11)}::bigint[], ${p(12)}::text[])
      AS u(ord, seq, record_id, revision, role, marks_seq, body)
    JOIN a_ok ok ON ok.ord = u.ord),
a_moved AS (UPDATE sessions s SET last_seq = ok.new_seq FROM a_ok ok WHERE s.session_key = ok.session_key RETURNING ok.ord)`;
}

/** Every append of the batch in one statement (one round trip, one commit). */
export const APPEND_ALL_AT_HEAD = `WITH ${appendCtes(1)}
SELECT ord FROM a_moved`;

/** The parameters of {@link appendCtes}, in its order. */
export function appendValues(batch: readonly HeadAppend[]): unknown[] {
  const columns: unknown[][] = [[], [], [], [], [], [], []];
  for (const [index, item] of batch.entries()) {
    columns[0]!.push(...item.stamped.map(() => index + 1));
    for (const [column, values] of recordColumns(item.stamped).entries())
      columns[column + 1]!.push(...(values as unknown[]));
  }
  return [
    batch.map((a) => a.session),
    batch.map((a) => a.fence),
    batch.map((a) => a.head.sessionId),
    batch.map((a) => a.head.revision),
    batch.map((a) => a.head.lastSeq),
    batch.map((a) => a.head.lastSeq + a.stamped.length),
    ...columns,
  ];
}

/**
 * True when the database answered the statement with an error (a SQLSTATE outside the connection
 * classes): it rolled the statement back, so trying its appends again cannot write one twice.
 */
export function rolledBack(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith("08");
}
