import type pg from "pg";
import { TillerError } from "../../errors.js";
import { stateJson } from "../jsonl/transcript-log.js";
import { checkCommitmentId } from "../memory-store.js";
import type { CommitmentClaim, StoredCommitment } from "../store.js";
import { inTransaction } from "./connection.js";

interface StoredRow {
  id: string;
  status: string | null;
  sending: boolean;
  claimed_by: string | null;
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
  sentMs: number | null;
}

/**
 * The commitments of a {@link PostgresStore}, on the `commitments` table: every saved version
 * replaces the row of its id (the row keeps the place it was first stored in), and a cluster-wide
 * claim lets exactly one process review a due commitment. `processId` is this store's claimer.
 *
 * Three writes are refused (`LEASE_LOST`, nothing of the call written), because another process may
 * act on the same commitment: a `sending` intent by a process that does not hold the claim, a version
 * that is not ended over an intent another process wrote, and a pending version over an ended one.
 * So a commitment is sent at most once cluster-wide, whatever the processes' memories hold.
 */
export class CommitmentRows {
  constructor(
    private readonly pool: pg.Pool,
    private readonly processId: string,
    private readonly leaseMs: number,
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
        "SELECT id, status, sending, claimed_by FROM commitments WHERE id = ANY($1) FOR UPDATE",
        [order],
      );
      const current = new Map(stored.map((row) => [row.id, row]));
      for (const row of rows) this.check(row, current.get(row.id));
      await client.query(
        `INSERT INTO commitments (id, session_key, dedupe_key, status, due_ms, sending, sent_ms, body)
         SELECT id, s, k, st, d, se, sm, b FROM unnest($1::text[], $2::text[], $3::text[], $4::text[],
           $5::float8[], $6::bool[], $7::float8[], $8::text[]) WITH ORDINALITY AS u(id, s, k, st, d, se, sm, b, n)
         ORDER BY n
         ON CONFLICT (id) DO UPDATE SET session_key = excluded.session_key, dedupe_key = excluded.dedupe_key,
           status = excluded.status, due_ms = excluded.due_ms, sending = excluded.sending,
           sent_ms = excluded.sent_ms, body = excluded.body, updated_at = now(),
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
        ],
      );
    });
  }

  async load(): Promise<StoredCommitment[]> {
    const { rows } = await this.pool.query<{ body: string }>(
      "SELECT body FROM commitments ORDER BY stored_order",
    );
    return rows.map((row) => JSON.parse(row.body) as StoredCommitment);
  }

  /**
   * Claims one commitment for this process when it is pending, due at `now` (gateway clock), has no
   * send in flight and no live claim of another process: the row is taken `FOR UPDATE SKIP LOCKED`, so
   * of processes claiming at once exactly one wins, and none waits for another's transaction.
   */
  async claim(id: string, now: number): Promise<CommitmentClaim> {
    const { rows } = await this.pool.query<{ claimed: string | null; current: string | null }>(
      `WITH pick AS (
         SELECT id FROM commitments
          WHERE id = $1 AND status = 'pending' AND NOT sending AND due_ms <= $3
            AND (claimed_by IS NULL OR claimed_by = $2 OR claimed_until_ms <= $3)
          FOR UPDATE SKIP LOCKED),
       taken AS (
         UPDATE commitments c SET claimed_by = $2, claimed_until_ms = $3::float8 + $4::float8
           FROM pick WHERE c.id = pick.id RETURNING c.body)
       SELECT (SELECT body FROM taken) AS claimed, (SELECT body FROM commitments WHERE id = $1) AS current`,
      [id, this.processId, now, this.leaseMs],
    );
    const row = rows[0];
    const body = row?.claimed ?? row?.current ?? null;
    return {
      claimed: row?.claimed !== null && row?.claimed !== undefined,
      record: body === null ? undefined : (JSON.parse(body) as StoredCommitment),
    };
  }

  private check(row: Encoded, stored: StoredRow | undefined): void {
    const mine = stored?.claimed_by === this.processId;
    if (row.sending && !(stored && stored.status === "pending" && mine))
      throw lost(row.id, "its send intent needs this process's claim, which it does not hold");
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
  return {
    id,
    json,
    session: text(copy.session),
    dedupeKey: text(copy.dedupeKey),
    status: text(copy.status),
    dueMs: number(copy.dueAt),
    sending: copy.sending !== undefined && copy.sending !== null,
    sentMs: number(sent?.at),
  };
}
