import type pg from "pg";
import type { TranscriptHead } from "../../ports/store.js";
import type { StampedRecord } from "../jsonl/transcript-log.js";
import { appendAtHead, recordColumns } from "./append-at-head.js";
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
 * The appends of a batch in one statement (one round trip, one commit). The sessions' rows are locked
 * in key order; a session's records are inserted, and its head moved on, only when its row still is
 * the head its writer knows and its run's token still holds the lease. Answers the places in the batch
 * (1-based) of the appends that went through; the others wrote nothing.
 */
const APPEND_ALL_AT_HEAD = `
WITH v AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::bigint[], $6::bigint[])
    WITH ORDINALITY AS v(session_key, fence, session_id, revision, last_seq, new_seq, ord)),
h AS (
  SELECT v.ord, v.session_key, v.fence, v.session_id, v.revision, v.last_seq, v.new_seq,
         s.session_id AS head_id, s.revision AS head_revision, s.last_seq AS head_seq
    FROM v JOIN sessions s ON s.session_key = v.session_key
   ORDER BY v.session_key FOR UPDATE OF s),
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

/** Batches at most this many statements in flight; appends arriving meanwhile form the next batch. */
const IN_FLIGHT = 2;

interface Waiting extends HeadAppend {
  resolve(done: boolean): void;
  reject(error: unknown): void;
}

/**
 * Group commit of transcript appends: appends of different sessions that arrive while earlier batches
 * are in flight go to the database together, in one statement, so a busy process pays one commit (one
 * wait for the disk) for many of them. An append resolves only once its batch has committed. A session
 * has at most one append waiting here (the store runs a session's writes one after another), so its
 * appends stay in call order. When a batch fails with an error of the database (which rolled it back),
 * each append is tried once more alone, so one bad append fails only itself; any other failure (the
 * connection broke, the batch may have committed) rejects every append of the batch.
 */
export class TranscriptAppends {
  private waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly pool: pg.Pool) {}

  /** True when the records were written; false when the head moved on or the token lost its lease. */
  append(item: HeadAppend): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...item, resolve, reject });
      if (this.waiting.length === 1) queueMicrotask(() => this.next());
    });
  }

  /** Runs one batch: whether each append went through, in the batch's order. */
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
    const moved = new Set(rows.map((row) => Number(row.ord)));
    return batch.map((_, index) => moved.has(index + 1));
  }

  private alone(append: Waiting): void {
    this.run([append]).then(
      (done) => append.resolve(done[0]!),
      (error: unknown) => append.reject(error),
    );
  }

  private next(): void {
    if (this.inFlight >= IN_FLIGHT || this.waiting.length === 0) return;
    // Rows in key order: two processes' batches lock shared rows in the same order.
    const batch = this.waiting.splice(0).sort((a, b) => (a.session < b.session ? -1 : 1));
    this.inFlight++;
    this.run(batch)
      .then(
        (done) => {
          for (const [index, append] of batch.entries()) append.resolve(done[index]!);
        },
        (error: unknown) => {
          if (batch.length > 1 && rolledBack(error)) for (const append of batch) this.alone(append);
          else for (const append of batch) append.reject(error);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.next();
      });
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
