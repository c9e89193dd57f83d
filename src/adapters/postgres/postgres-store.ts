import { nanoid } from "nanoid";
import type pg from "pg";
import { ConfigError, LeaseLostError, MessageRejectedError } from "../../errors.js";
import type { DeliveryClaims } from "../../ports/delivery-claims.js";
import { assertSessionKey } from "../../ports/session-key.js";
import type {
  CommitmentChanges,
  CommitmentClaim,
  CommitmentClaimLimits,
  ExpectedHead,
  RecordBody,
  ScheduleState,
  StoredCommitment,
  TranscriptHead,
  TranscriptRecord,
  TranscriptStore,
} from "../../ports/store.js";
import { checkExpect, parseRecord, stampRecords, stateJson } from "../jsonl/transcript-log.js";
import { KeyedQueue } from "../keyed-queue.js";
import { appendLocked } from "./append-at-head.js";
import { readClusterView } from "./cluster-view.js";
import type { ClusterView } from "./cluster-view.types.js";
import { CommitmentRows } from "./commitment-rows.js";
import { checkSchema, createPool, GENERIC_PLANS, inTransaction } from "./connection.js";
import type { PostgresConnectionOptions } from "./connection-options.js";
import { type FenceSource, fenceHolds, NO_FENCES } from "./fences.js";
import { migrate } from "./migrate.js";
import { PostgresDeliveryClaims } from "./postgres-delivery-claims.js";
import * as sql from "./store-sql.js";
import { StoreWrites } from "./store-writes.js";

/** Options of {@link PostgresStore.connect}: the database, the schema, and the lease of a session's writer. */
export interface PostgresStoreOptions extends PostgresConnectionOptions {
  /** Clock for the records' `at` (ms). @default Date.now */
  now?: () => number;
  /** The fencing tokens of this process's runs (the cluster lanes). @default no fencing */
  fences?: FenceSource;
  /** This process's name as a commitment claimer (give the lanes' `processId`). @default a random id */
  processId?: string;
  /**
   * How long a commitment claim holds (gateway clock) when its holder neither saves nor sends it: a
   * claim of a process that died is taken by another after it. @default 600000
   */
  commitmentLeaseMs?: number;
  /** How long a claim of a send holds unrenewed (give the cluster's lease). @default 10000 */
  deliveryLeaseMs?: number;
}

interface HeadRow {
  session_id: string;
  revision: number;
  last_seq: string;
  fence_ok: boolean;
}

/** Session heads kept for one-statement appends (a session past them takes the longer path once). */
const HEADS_KEPT = 10_000;

const LOCK_HEAD = `SELECT s.session_id, s.revision, s.last_seq, ${fenceHolds("s.session_key", "$2")} AS fence_ok
  FROM sessions s WHERE s.session_key = $1 FOR UPDATE`;

/**
 * The transcript store on PostgreSQL, for several gateway processes sharing one database: the same
 * semantics as the JSONL store (gap-free seq, revisions, rotation, stale writers refused), with appends
 * ordered by a row lock on the session (compare-and-set on session id + revision in the same
 * transaction). Writes made while this process runs the session's task carry its fencing token, and a
 * token that lost its lease is refused with {@link LeaseLostError}.
 *
 * @example
 * ```ts
 * const store = await PostgresStore.connect({ url: "postgres://127.0.0.1/tiller" });
 * const head = await store.open("telegram:42");
 * await store.append("telegram:42", [{ role: "user", text: "hi", messageId: "m1" }], head);
 * ```
 */
export class PostgresStore implements TranscriptStore {
  readonly schema: string;
  /** This process in the cluster (its commitment claims, the cluster view). */
  readonly processId: string;
  private readonly pool: pg.Pool;
  private readonly now: () => number;
  private readonly fences: FenceSource;
  private readonly commitments: CommitmentRows;
  /** Typed by its port, so the public declarations do not name the driver's types. */
  readonly deliveryClaims: DeliveryClaims;
  /** Mutations of one session run one after another, in call order (the row lock orders processes). */
  private readonly chains = new KeyedQueue();
  /**
   * Each session's head as this process last wrote or read it: an append from it takes one statement
   * (which checks it is still the head); another process's write since then costs the longer path.
   */
  private readonly heads = new Map<string, TranscriptHead>();
  /** State saves, and appends at known heads, of many sessions: committed together. */
  private readonly writes: StoreWrites;

  private constructor(pool: pg.Pool, options: PostgresStoreOptions) {
    this.pool = pool;
    this.schema = checkSchema(options.schema);
    this.now = options.now ?? Date.now;
    this.fences = options.fences ?? NO_FENCES;
    const lease = options.commitmentLeaseMs ?? 600_000;
    if (typeof lease !== "number" || !(lease > 0))
      throw new ConfigError("commitmentLeaseMs", "a positive number of ms", lease);
    this.processId = options.processId ?? `s${nanoid(10)}`;
    this.commitments = new CommitmentRows(pool, this.processId, lease, this.schema);
    this.writes = new StoreWrites(pool);
    this.deliveryClaims = new PostgresDeliveryClaims(pool, this.processId, options.deliveryLeaseMs ?? 10_000);
  }

  /** Connects, applies pending migrations, and returns the store. */
  static async connect(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = checkSchema(options.schema);
    const pool = createPool({ ...options, schema }, GENERIC_PLANS);
    try {
      await migrate(pool, schema);
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresStore(pool, options);
  }

  /**
   * Resolves when the database answers a query within `timeoutMs`; rejects otherwise (what
   * `tiller serve`'s `/readyz` asks).
   */
  async ping(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the database did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([this.pool.query("SELECT 1"), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async open(session: string): Promise<TranscriptHead> {
    checkKey(session);
    for (;;) {
      const row = (await this.pool.query<HeadRow>({ ...sql.OPEN, values: [session, nanoid()] })).rows[0];
      if (row) return this.remember(session, headOf(row));
    }
  }

  append(session: string, records: RecordBody[], expect: ExpectedHead): Promise<TranscriptRecord[]> {
    checkKey(session);
    return this.serial(session, async () => {
      const known = this.heads.get(session);
      if (known && known.sessionId === expect?.sessionId && known.revision === expect.revision) {
        // The head this process last wrote or read: one statement, which checks it is still the head.
        const stamped = stampRecords(records, known, this.now(), nanoid);
        if (stamped.length === 0) return [];
        const fence = this.fences.fenceFor(session) ?? null;
        const write = this.writes.append({ session, fence, head: known, stamped });
        if (fence !== null) this.fences.using?.(session, write);
        if (
          await write.catch((error: unknown) => {
            this.heads.delete(session);
            throw error;
          })
        ) {
          this.remember(session, { ...known, lastSeq: known.lastSeq + stamped.length });
          return stamped.map(({ record }) => record);
        }
        // Another process wrote, or the head moved on: read it, under the lock, and judge again.
        this.heads.delete(session);
      }
      return this.locked(session, expect, async (client, head) => {
        const stamped = stampRecords(records, head, this.now(), nanoid);
        if (stamped.length === 0) return [];
        await appendLocked(client, session, head, stamped);
        this.remember(session, { ...head, lastSeq: head.lastSeq + stamped.length });
        return stamped.map(({ record }) => record);
      });
    });
  }

  async read(session: string): Promise<TranscriptRecord[]> {
    checkKey(session);
    const { rows } = await this.pool.query<{ body: string }>({ ...sql.READ, values: [session] });
    return rows.map((row) => parseRecord(row.body));
  }

  async readWindow(session: string): Promise<TranscriptRecord[]> {
    checkKey(session);
    const { rows } = await this.pool.query<{ body: string }>({ ...sql.READ_WINDOW, values: [session] });
    return rows.map((row) => parseRecord(row.body));
  }

  reset(session: string, expect: ExpectedHead): Promise<TranscriptHead> {
    checkKey(session);
    return this.serial(session, () =>
      this.locked(session, expect, async (client) => {
        const { rows } = await client.query<HeadRow>(
          `UPDATE sessions SET revision = revision + 1, window_after_seq = last_seq WHERE session_key = $1
           RETURNING session_id, revision, last_seq`,
          [session],
        );
        return this.remember(session, headOf(rows[0]!));
      }),
    );
  }

  rotate(session: string, expect: ExpectedHead): Promise<TranscriptHead> {
    checkKey(session);
    return this.serial(session, () =>
      this.locked(session, expect, async (client) => {
        const { rows } = await client.query<HeadRow>(
          `UPDATE sessions SET window_after_seq = greatest(window_after_seq, last_seq) WHERE session_key = $1
           RETURNING session_id, revision, last_seq`,
          [session],
        );
        return this.remember(session, headOf(rows[0]!));
      }),
    );
  }

  async sessions(prefix?: string): Promise<string[]> {
    const { rows } =
      prefix === undefined
        ? await this.pool.query<{ session_key: string }>(
            "SELECT session_key FROM sessions UNION SELECT session_key FROM session_state",
          )
        : // Only the matching keys cross the wire (a subagent's parent lists its children this way).
          await this.pool.query<{ session_key: string }>(
            `SELECT session_key FROM sessions WHERE starts_with(session_key, $1)
             UNION SELECT session_key FROM session_state WHERE starts_with(session_key, $1)`,
            [prefix],
          );
    // Sorted as the other stores sort (UTF-16 code units), not by the database's collation.
    return rows.map((row) => row.session_key).sort();
  }

  saveState(session: string, state: unknown): Promise<void> {
    checkKey(session);
    const json = state === null ? null : stateJson(state);
    return this.serial(session, async () => {
      // The token at the time the write runs: a run that ended meanwhile no longer fences it.
      const fence = this.fences.fenceFor(session) ?? null;
      // Between turns no run fences the save: the session's ownership does (in a cluster).
      const owner = fence === null ? this.fences.ownerFenceFor?.(session) : undefined;
      const query = this.writes.save({ session, fence, owner, json });
      if (fence !== null) this.fences.using?.(session, query);
      if (!(await query)) throw new LeaseLostError(session, fence ?? owner!.fence);
    });
  }

  async loadState(session: string): Promise<unknown | null> {
    checkKey(session);
    const { rows } = await this.pool.query<{ state: string }>({ ...sql.LOAD_STATE, values: [session] });
    return rows[0] ? JSON.parse(rows[0].state) : null;
  }

  saveCommitments(records: readonly StoredCommitment[]): Promise<void> {
    return this.commitments.save(records);
  }

  loadCommitments(): Promise<StoredCommitment[]> {
    return this.commitments.load();
  }

  /** The commitments written after `after` (every one when undefined), and the cursor for next time. */
  loadCommitmentChanges(after: string | undefined): Promise<CommitmentChanges> {
    return this.commitments.changes(after);
  }

  claimCommitment(id: string, now: number, limits?: CommitmentClaimLimits): Promise<CommitmentClaim> {
    return this.commitments.claim(id, now, limits?.maxPerDay);
  }

  claimCutOffSend(id: string, now: number): Promise<CommitmentClaim> {
    return this.commitments.claimCutOff(id, now);
  }

  async claimMessageId(session: string, messageId: string, at: number, since: number): Promise<boolean> {
    checkKey(session);
    const { rows } = await this.pool.query({
      ...sql.CLAIM_MESSAGE_ID,
      values: [session, messageId, at, since],
    });
    return rows.length > 0;
  }

  async releaseMessageId(session: string, messageId: string): Promise<void> {
    await this.pool.query({ ...sql.RELEASE_MESSAGE_ID, values: [session, messageId] });
  }

  /** The cluster's lanes, processes and session owners, as the database has them now. */
  clusterView(): Promise<ClusterView> {
    return readClusterView(this.pool, this.schema, this.processId);
  }

  async saveSchedule(id: string, state: ScheduleState | null): Promise<void> {
    if (state === null) {
      await this.pool.query("DELETE FROM schedule_state WHERE schedule_id = $1", [id]);
      return;
    }
    await this.pool.query(
      `INSERT INTO schedule_state (schedule_id, state) VALUES ($1, $2)
       ON CONFLICT (schedule_id) DO UPDATE SET state = excluded.state, updated_at = now()`,
      [id, JSON.stringify(state)],
    );
  }

  async loadSchedules(): Promise<Record<string, ScheduleState>> {
    const { rows } = await this.pool.query<{ schedule_id: string; state: ScheduleState }>(
      "SELECT schedule_id, state FROM schedule_state",
    );
    return Object.fromEntries(rows.map((row) => [row.schedule_id, row.state]));
  }

  async close(): Promise<void> {
    await this.chains.idle();
    await this.pool.end();
  }

  /**
   * Runs `work` in a transaction holding the session's row lock, after checking the writer's head
   * (StaleWriterError) and this process's fencing token (LeaseLostError): either fails, nothing is written.
   */
  private locked<T>(
    session: string,
    expect: ExpectedHead,
    work: (client: pg.PoolClient, head: TranscriptHead) => Promise<T>,
  ): Promise<T> {
    const fence = this.fences.fenceFor(session) ?? null;
    const write = inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<HeadRow>(LOCK_HEAD, [session, fence]);
      const row = rows[0];
      checkExpect(session, row && { sessionId: row.session_id, revision: row.revision }, expect);
      if (!row!.fence_ok) throw new LeaseLostError(session, fence!);
      return work(client, headOf(row!));
    });
    if (fence !== null) this.fences.using?.(session, write);
    return write;
  }

  /** Notes the session's head (the most recent at the end; the oldest go past HEADS_KEPT). */
  private remember(session: string, head: TranscriptHead): TranscriptHead {
    this.heads.delete(session);
    this.heads.set(session, head);
    if (this.heads.size > HEADS_KEPT) this.heads.delete(this.heads.keys().next().value!);
    return head;
  }

  private serial<T>(session: string, work: () => Promise<T>): Promise<T> {
    return this.chains.run(session, work);
  }
}

function headOf(row: { session_id: string; revision: number; last_seq: string }): TranscriptHead {
  return { sessionId: row.session_id, revision: row.revision, lastSeq: Number(row.last_seq) };
}

/** A key the store can hold: what every store accepts, and no NUL (PostgreSQL text cannot carry it). */
function checkKey(session: string): void {
  assertSessionKey(session);
  if (session.includes("\u0000")) {
    throw new MessageRejectedError("session", "expected a key without NUL characters", "SESSION_KEY_INVALID");
  }
}
