import type pg from "pg";
import type { TranscriptHead } from "../../ports/store.js";
import type { StampedRecord } from "../jsonl/transcript-log.js";
import { appendAtHead, recordColumns } from "./append-at-head.js";
import { fenceHolds } from "./fences.js";
import { GroupCommit } from "./group-commit.js";

/** One session's append at the head this process knows: the records stamped from it, and the run's token. */
export interface HeadAppend {
  session: string;
  /** The run's lane token, or null. */
  fence: number | null;
  head: TranscriptHead;
  stamped: readonly StampedRecord[];
}

/**
 * The appends of a batch in one statement (one round trip, one commit). The sessions' rows are locked
 * in the batch's order, which the caller sorts by key (every batch locks in one order: no deadlock),
 * each by its key: a lookup per session, whatever size the plan guesses for the batch (a join would
 * read the whole table under the generic plan). A session's records are inserted, and its head moved
 * on, only when its row still is the head its writer knows and its run's token still holds the lease.
 * Answers the places in the batch (1-based) of the appends that went through; the others wrote nothing.
 */
const APPEND_ALL_AT_HEAD = `
WITH v AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::bigint[], $6::bigint[])
    WITH ORDINALITY AS v(session_key, fence, session_id, revision, last_seq, new_seq, ord)),
h AS (
  SELECT v.ord, v.session_key, v.fence, v.session_id, v.revision, v.last_seq, v.new_seq,
         s.session_id AS head_id, s.revision AS head_revision, s.last_seq AS head_seq
    FROM v, LATERAL (SELECT session_id, revision, last_seq FROM sessions s
                      WHERE s.session_key = v.session_key FOR UPDATE) s),
ok AS (
  SELECT h.ord, h.session_key, h.new_seq FROM h
   WHERE h.head_id = h.session_id AND h.head_revision = h.revision AND h.head_seq = h.last_seq
     AND ${fenceHolds("h.session_key", "h.fence")}),
ins AS (
  INSERT INTO transcript (session_key, seq, record_id, revision, role, marks_seq, body)
  SELECT ok.session_key, u.seq, u.record_id, u.revision, u.role, u.marks_seq, u.body
    FROM unnest($7::bigint[], $8::bigint[], $9::text[], $10::int[], $11::text[], $12::bigint[], $13::text[])
      AS u(ord, seq, record_id, revision, role, marks_seq, body)
    JOIN ok ON ok.ord = u.ord),
moved AS (UPDATE sessions s SET last_seq = ok.new_seq FROM ok WHERE s.session_key = ok.session_key RETURNING ok.ord)
SELECT ord FROM moved`;

/**
 * Group commit of transcript appends at a known head (see {@link GroupCommit}). When a batch fails
 * with an error of the database (which rolled it back), each append is tried once more alone, so one
 * bad append fails only itself; any other failure (the connection broke, the batch may have committed)
 * rejects every append of the batch, since an append written twice would duplicate records.
 */
export class TranscriptAppends {
  private readonly batches = new GroupCommit<HeadAppend>((batch) => this.run(batch), rolledBack);

  constructor(private readonly pool: pg.Pool) {}

  /** True when the records were written; false when the head moved on or the token lost its lease. */
  append(item: HeadAppend): Promise<boolean> {
    return this.batches.submit(item);
  }

  /** Runs one batch (GroupCommit hands it over sorted by key): whether each append went through, in order. */
  private async run(batch: readonly HeadAppend[]): Promise<boolean[]> {
    if (batch.length === 1) {
      const only = batch[0]!;
      return [await appendAtHead(this.pool, only.session, only.fence, only.head, only.stamped)];
    }
    const columns: unknown[][] = [[], [], [], [], [], [], []];
    for (const [index, item] of batch.entries()) {
      columns[0]!.push(...item.stamped.map(() => index + 1));
      for (const [column, values] of recordColumns(item.stamped).entries())
        columns[column + 1]!.push(...(values as unknown[]));
    }
    const { rows } = await this.pool.query<{ ord: string }>({
      // Prepared once per connection, as the single append is.
      name: "tiller.appendAllAtHead",
      text: APPEND_ALL_AT_HEAD,
      values: [
        batch.map((a) => a.session),
        batch.map((a) => a.fence),
        batch.map((a) => a.head.sessionId),
        batch.map((a) => a.head.revision),
        batch.map((a) => a.head.lastSeq),
        batch.map((a) => a.head.lastSeq + a.stamped.length),
        ...columns,
      ],
    });
    const moved = new Set(rows.map((row) => Number(row.ord) - 1));
    return batch.map((_, index) => moved.has(index));
  }
}

/**
 * True when the database answered the statement with an error (a SQLSTATE outside the connection
 * classes): it rolled the statement back, so trying its appends again cannot write one twice.
 */
function rolledBack(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith("08");
}
