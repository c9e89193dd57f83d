import type pg from "pg";
import { TillerError } from "../../errors.js";
import type { CommitmentChanges, CommitmentClaim, StoredCommitment } from "../../ports/store.js";
import { stateJson } from "../jsonl/transcript-log.js";
import { checkCommitmentId } from "../memory-store.js";
import { inTransaction } from "./connection.js";

const DAY_MS = 24 * 3_600_000;

/**
 * A claim of commitment `$1` for process `$2` at `$3` (gateway clock) with a lease of `$4` ms: taken
 * `FOR UPDATE SKIP LOCKED` when `which` holds and no live claim of another process does, so of
 * processes claiming at once exactly one wins and none waits. Answers the body it claimed (or null)
 * and the latest stored body.
 */
const claimSql = (which: string) => `WITH pick AS (
  SELECT id FROM commitments
   WHERE id = $1 AND status = 'pending' AND ${which}
     AND (claimed_by IS NULL OR claimed_by = $2 OR claimed_until_ms <= $3)
   FOR UPDATE SKIP LOCKED),
taken AS (
  UPDATE commitments c SET claimed_by = $2, claimed_until_ms = $3::float8 + $4::float8
    FROM pick WHERE c.id = pick.id RETURNING c.body)
SELECT (SELECT body FROM taken) AS claimed, (SELECT body FROM commitments WHERE id = $1) AS current`;
/** For its review: due, and no send of it in flight. */
const REVIEW_CLAIM = claimSql("NOT sending AND due_ms <= $3");
/** To settle a send cut off on its way: its intent is there (the claim test does the rest). */
const CUT_OFF_CLAIM = claimSql("sending");

interface StoredRow {
  id: string;
  status: string | null;
  sending: boolean;
  claimed_by: string | null;
  claimed_until_ms: number | null;
}

/** One record as the table keeps it: its JSON text and the fields the claim and operators query. */
interface Encoded {
  id: string;
  json: string;
  session: string | null;
  dedupeKey: string | null;
  status: string | null;
  dueMs: number | null;
  sending: boolean;
  /** When the send intent was written (gateway clock), if it carries one. */
  sendingAt: number | null;
  sentMs: number | null;
}

/**
 * The commitments of a {@link PostgresStore}, on the `commitments` table: every saved version
 * replaces the row of its id (the row keeps the place it was first stored in), and a cluster-wide
 * claim lets exactly one process review a due commitment. `processId` is this store's claimer.
 *
 * Three writes are refused (`LEASE_LOST`, nothing of the call written), because another process may
 * act on the same commitment: a `sending` intent by a process that does not hold a live claim (one
 * whose lease had not run out at the intent's time), a version that is not ended over an intent
 * another process wrote, and a pending version over an ended one. So a commitment is sent at most once
 * cluster-wide, whatever the processes' memories hold; and since every intent is written under a live
 * claim, a claim that counts a session's live claims and sends keeps `maxPerDay` exact cluster-wide.
 *
 * Every write numbers the rows it stores with the next `change_seq`, so that a process can read only
 * what changed since its last read ({@link CommitmentRows.changes}).
 */
export class CommitmentRows {
  constructor(
    private readonly pool: pg.Pool,
    private readonly processId: string,
    private readonly leaseMs: number,
    private readonly schema: string,
  ) {}

  async save(records: readonly StoredCommitment[]): Promise<void> {
    // Encode all first: one record JSON cannot carry leaves every record of the call unstored.
    const encoded = records.map(encode);
    // The last version of an id in the call wins; a new id keeps the place it first had in it.
    const byId = new Map<string, Encoded>();
    for (const record of encoded) byId.set(record.id, record);
    const order = [...new Set(encoded.map((record) => record.id))];
    const rows = order.map((id) => byId.get(id)!);
    if (rows.length === 0) return;
    await inTransaction(this.pool, async (client) => {
      const { rows: stored } = await client.query<StoredRow>(
        `SELECT id, status, sending, claimed_by, claimed_until_ms FROM commitments
          WHERE id = ANY($1) FOR UPDATE`,
        [order],
      );
      const current = new Map(stored.map((row) => [row.id, row]));
      for (const row of rows) this.check(row, current.get(row.id));
      // The change number last, just before the rows: its row lock is held until this commits, so
      // another write's number (taken after this one commits) is always higher, and a reader never
      // sees a number before every lower one is visible. A sequence's nextval() would not order them:
      // a transaction that took 10 may commit after one that took 11 was read.
      const { rows: change } = await client.query<{ seq: string }>(
        "UPDATE commitment_changes SET last_seq = last_seq + 1 WHERE id = 1 RETURNING last_seq AS seq",
      );
      await client.query(
        `INSERT INTO commitments (id, session_key, dedupe_key, status, due_ms, sending, sent_ms, body,
           change_seq)
         SELECT id, s, k, st, d, se, sm, b, $10 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[],
           $5::float8[], $6::bool[], $7::float8[], $8::text[]) WITH ORDINALITY AS u(id, s, k, st, d, se, sm, b, n)
         ORDER BY n
         ON CONFLICT (id) DO UPDATE SET session_key = excluded.session_key, dedupe_key = excluded.dedupe_key,
           status = excluded.status, due_ms = excluded.due_ms, sending = excluded.sending,
           sent_ms = excluded.sent_ms, body = excluded.body, updated_at = now(),
           change_seq = excluded.change_seq,
           -- the claimer's own write of a version without an intent ends its claim
           claimed_by = CASE WHEN commitments.claimed_by = $9 AND NOT excluded.sending THEN NULL
                             ELSE commitments.claimed_by END,
           claimed_until_ms = CASE WHEN commitments.claimed_by = $9 AND NOT excluded.sending THEN NULL
                                   ELSE commitments.claimed_until_ms END`,
        [
          rows.map((r) => r.id),
          rows.map((r) => r.session),
          rows.map((r) => r.dedupeKey),
          rows.map((r) => r.status),
          rows.map((r) => r.dueMs),
          rows.map((r) => r.sending),
          rows.map((r) => r.sentMs),
          rows.map((r) => r.json),
          this.processId,
          change[0]!.seq,
        ],
      );
    });
  }

  async load(): Promise<StoredCommitment[]> {
    return (await this.changes(undefined)).records;
  }

  /**
   * The rows written after change `after` (every row when undefined, in the order first stored; else
   * in the order written), and the change number they bring the reader to. One statement, so the rows
   * and the number come from one snapshot: every write numbered up to it is among them or was read
   * before (see {@link CommitmentRows.save} for why no lower number can commit later).
   */
  async changes(after: string | undefined): Promise<CommitmentChanges> {
    // Two plain statements, not one with `$1 IS NULL OR ...`: that form keeps the planner from using
    // commitments_change. The counter is read by its key (one row, known to the planner), so the plan
    // of a read of nothing changed stays cheap (no JIT compilation either). The cursor goes in as a
    // literal (checked digits): the pool plans parameters generically, and only its value tells the
    // planner that few rows are past it.
    const since = after === undefined ? null : checkCursor(after);
    const { rows } = await this.pool.query<{ body: string | null; last: string }>(
      `SELECT c.body, h.last_seq AS last
         FROM (SELECT last_seq FROM commitment_changes WHERE id = 1) h
         LEFT JOIN LATERAL (SELECT body, change_seq, stored_order FROM commitments
                             ${since === null ? "" : `WHERE change_seq > ${since}::bigint`}) c ON true
        ORDER BY ${since === null ? "" : "c.change_seq, "}c.stored_order`,
    );
    const records: StoredCommitment[] = [];
    for (const row of rows) if (row.body !== null) records.push(JSON.parse(row.body) as StoredCommitment);
    return { records, cursor: rows[0]?.last ?? since ?? "0" };
  }

  /**
   * Claims one commitment for this process when it is pending, due at `now` (gateway clock), has no
   * send in flight and no live claim of another process: the row is taken `FOR UPDATE SKIP LOCKED`, so
   * of processes claiming at once exactly one wins, and none waits for another's transaction.
   *
   * With `maxPerDay`, the claim is also refused while the session's sends in the 24 h up to `now` plus
   * its commitments in flight (another pending one with a send intent, or with a claim whose lease has
   * not run out, by any process) reach it. The count and the claim run under a transaction-scoped
   * advisory lock on the session, so two processes claiming two commitments of one session count one
   * after the other, and the second sees the first's claim.
   */
  async claim(id: string, now: number, maxPerDay?: number): Promise<CommitmentClaim> {
    if (maxPerDay === undefined) return this.take(this.pool, id, now);
    return inTransaction(this.pool, async (client) => {
      const { rows: found } = await client.query<{ session_key: string | null }>(
        "SELECT session_key FROM commitments WHERE id = $1",
        [id],
      );
      const session = found[0]?.session_key;
      if (session === null || session === undefined) return this.take(client, id, now);
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
        `${this.schema}:commitment-sends:${session}`,
      ]);
      const { rows } = await client.query<{ sent: number; oldest: number | null; flying: number }>(
        `SELECT count(*)::int AS sent, min(sent_ms) AS oldest,
                (SELECT count(*)::int FROM commitments
                  WHERE session_key = $1 AND status = 'pending' AND id <> $3
                    AND (sending OR (claimed_by IS NOT NULL AND claimed_until_ms > $2))) AS flying
           FROM commitments WHERE session_key = $1 AND sent_ms IS NOT NULL AND sent_ms > $2::float8 - $4::float8`,
        [session, now, id, DAY_MS],
      );
      const { sent, oldest, flying } = rows[0]!;
      if (sent + flying < maxPerDay) return this.take(client, id, now);
      const { rows: current } = await client.query<{ body: string }>(
        "SELECT body FROM commitments WHERE id = $1",
        [id],
      );
      return {
        claimed: false,
        record: current[0] ? (JSON.parse(current[0].body) as StoredCommitment) : undefined,
        // Held by sends in flight: they may end (or fail) by the next tick; else the oldest send leaves.
        quotaFreesAt: flying > 0 || oldest === null ? now : oldest + DAY_MS,
      };
    });
  }

  /**
   * Claims a pending commitment whose send intent was written under a claim that has run out (its
   * process died mid-send: the channel may or may not have taken it), or under this process's own
   * claim, so that this process may settle it. A live claim of another process is left alone: its
   * send may still be on its way and its receipt is the truth.
   */
  claimCutOff(id: string, now: number): Promise<CommitmentClaim> {
    return this.takeWhere(this.pool, CUT_OFF_CLAIM, id, now);
  }

  private take(db: pg.Pool | pg.PoolClient, id: string, now: number): Promise<CommitmentClaim> {
    return this.takeWhere(db, REVIEW_CLAIM, id, now);
  }

  /** Takes the claim of row `id` for this process when `sql` picks it; the latest version either way. */
  private async takeWhere(
    db: pg.Pool | pg.PoolClient,
    sql: string,
    id: string,
    now: number,
  ): Promise<CommitmentClaim> {
    const { rows } = await db.query<{ claimed: string | null; current: string | null }>(sql, [
      id,
      this.processId,
      now,
      this.leaseMs,
    ]);
    return claimOf(rows[0]);
  }

  private check(row: Encoded, stored: StoredRow | undefined): void {
    const mine = stored?.claimed_by === this.processId;
    if (row.sending && !(stored && stored.status === "pending" && mine))
      throw lost(row.id, "its send intent needs this process's claim, which it does not hold");
    // Written when the claim had run out, the intent would not have been counted by another process's
    // claim of the same session since (maxPerDay), nor kept that process from retaking this one.
    if (
      row.sending &&
      !stored?.sending &&
      row.sendingAt !== null &&
      stored?.claimed_until_ms !== null &&
      stored?.claimed_until_ms !== undefined &&
      stored.claimed_until_ms <= row.sendingAt
    )
      throw lost(row.id, "its send intent came after this process's claim ran out");
    if (stored?.sending && row.status === "pending" && !mine)
      throw lost(row.id, "another process's send of it is in flight");
    if (stored && stored.status !== null && stored.status !== "pending" && row.status === "pending")
      throw lost(row.id, `it is ${stored.status} already`);
  }
}

function lost(id: string, why: string): TillerError {
  return new TillerError("LEASE_LOST", `commitment "${id}": ${why}; nothing was written`);
}

function encode(record: StoredCommitment): Encoded {
  const id = checkCommitmentId(record);
  const json = stateJson(record);
  const copy = JSON.parse(json) as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  const number = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : null);
  const sent = copy.sent as { at?: unknown } | undefined;
  const sending = copy.sending as { at?: unknown } | undefined | null;
  return {
    id,
    json,
    session: text(copy.session),
    dedupeKey: text(copy.dedupeKey),
    status: text(copy.status),
    dueMs: number(copy.dueAt),
    sending: sending !== undefined && sending !== null,
    sendingAt: number(sending?.at),
    sentMs: number(sent?.at),
  };
}

/** A claim's answer: claimed (the body it took) or not, and the latest stored version either way. */
function claimOf(row: { claimed: string | null; current: string | null } | undefined): CommitmentClaim {
  const body = row?.claimed ?? row?.current ?? null;
  return {
    claimed: row?.claimed !== null && row?.claimed !== undefined,
    record: body === null ? undefined : (JSON.parse(body) as StoredCommitment),
  };
}

/** A change cursor as {@link CommitmentRows.changes} returns it: the decimal text of a bigint. */
function checkCursor(cursor: unknown): string {
  if (typeof cursor !== "string" || !/^\d{1,19}$/.test(cursor))
    throw new TillerError(
      "STORE_FAILED",
      `loadCommitmentChanges after: expected a cursor this store returned, got ${JSON.stringify(cursor)}`,
    );
  return cursor;
}
