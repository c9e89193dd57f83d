import { nanoid } from "nanoid";
import type pg from "pg";
import type { DeliveryKind } from "../../ports/channel.js";
import type { Clock, TimerHandle } from "../../ports/clock.js";
import {
  type DeliveryBody,
  type DeliveryLog,
  type DeliveryLogOptions,
  type DeliveryRecord,
  keepOption,
} from "../../ports/delivery-log.js";
import { KeyedQueue } from "../keyed-queue.js";
import { SystemClock } from "../system-clock.js";
import { checkSchema, clientConfig, createPool, GENERIC_PLANS } from "./connection.js";
import type { PostgresConnectionOptions } from "./connection-options.js";
import { GroupCommit } from "./group-commit.js";
import { LaneListener } from "./lane-listener.js";
import { migrate } from "./migrate.js";
import { rolledBack } from "./transcript-appends.js";

/** Options of the PostgreSQL delivery log that keeps the web channel's deliveries for several processes. */
export interface PostgresDeliveryLogOptions extends PostgresConnectionOptions, DeliveryLogOptions {
  /**
   * Looks this often (one query for every watched session) for deliveries a lost NOTIFY did not
   * announce, and wakes the streams of the sessions that have new ones. @default 1000
   */
  pollMs?: number;
  /** @default a `SystemClock` */
  clock?: Clock;
}

/** One append waiting for its batch. */
interface Storing {
  session: string;
  body: DeliveryBody;
}

interface Row {
  message_id: string;
  kind: DeliveryKind;
  text: string;
  run_id: string | null;
  delivery_id: string | null;
  at_ms: number;
}

const COLUMNS = "message_id, kind, text, run_id, delivery_id, at_ms";
/**
 * The appends of a batch in one statement, one call each (web_delivery_store, migration 12), in one
 * transaction, sessions in key order (every batch takes head rows in one order): each session's head
 * row is taken (appends of one session, from any process, follow one another: seq is gap-free); a
 * delivery id already stored for the session answers the stored row and stores nothing; else the row
 * is inserted, the oldest rows past `keep` are pruned every few appends, and the schema's channel is
 * told the session at commit. Prepared once per connection, as the reads are.
 */
const STORE_ALL = {
  name: "tiller.webDeliveryStoreAll",
  text: `SELECT v.ord, r.*
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
              $7::double precision[], $8::text[])
         WITH ORDINALITY AS v(session_key, delivery_id, tail, kind, text, run_id, at_ms, payload, ord)
  CROSS JOIN LATERAL web_delivery_store(v.session_key, v.delivery_id, v.tail, v.kind, v.text, v.run_id,
                                        v.at_ms, $9, $10, $11, v.payload) r`,
};
// Only the newest `keep` ($2, NULL for all) are read: rows past them wait for the next prune.
const KEPT = "COALESCE((SELECT last_seq FROM web_delivery_heads WHERE session_key = $1) - $2, 0)";
const ALL = {
  name: "tiller.webDeliveriesAll",
  text: `SELECT ${COLUMNS} FROM web_deliveries WHERE session_key = $1 AND seq > ${KEPT} ORDER BY seq`,
};
// After a known message: the kept rows with a higher seq. An unknown (or pruned) one, or none, gives
// them all.
const AFTER = {
  name: "tiller.webDeliveriesAfter",
  text: `SELECT ${COLUMNS} FROM web_deliveries WHERE session_key = $1
  AND seq > GREATEST(COALESCE((SELECT seq FROM web_deliveries WHERE session_key = $1 AND message_id = $3), 0), ${KEPT})
  ORDER BY seq`,
};
// The poll: the watched sessions' last seq, one query however many streams are open.
const HEADS = {
  name: "tiller.webDeliveryHeads",
  text: "SELECT session_key, last_seq FROM web_delivery_heads WHERE session_key = ANY($1::text[])",
};

/** The NOTIFY channel of a schema's deliveries (a channel name is at most 63 bytes). */
export function deliveriesChannel(schema: string): string {
  return `${schema.slice(0, 40)}_web_deliveries`;
}

/**
 * The `web` channel's deliveries in PostgreSQL (`web_deliveries`), shared by every `tiller serve`
 * process of the schema: a delivery whose turn ran on one process is streamed by all of them. An
 * append is acknowledged once its transaction has committed; a `deliveryId` already stored for the
 * session returns the stored record and stores nothing, whichever process stored it. Each insert
 * NOTIFYs the schema's channel with the session key, waking the streams on every process that has
 * one open (only those listen); the streams also wake on a poll, so a lost NOTIFY costs latency only.
 *
 * @example
 * ```ts
 * const log = await PostgresDeliveryLog.connect({ url: "postgres://localhost/tiller" });
 * const record = await log.append("web:1", { kind: "reply", text: "hi" });
 * (await log.readAfter("web:1", undefined)).length; // 1
 * ```
 */
export class PostgresDeliveryLog implements DeliveryLog {
  private readonly watchers = new Map<string, Set<() => void>>();
  /** Each watched session's last seq as the previous poll saw it. */
  private readonly heads = new Map<string, number>();
  /** Appends of one session from this process, in the order they were made. */
  private readonly appends = new KeyedQueue();
  /**
   * Appends of different sessions made while a batch is in flight, committed together. A batch that
   * failed is tried again append by append when that cannot store one twice: the database rolled it
   * back, or the append has a delivery id (stored already, it answers the stored row).
   */
  private readonly batches = new GroupCommit<Storing, DeliveryRecord>(
    (batch) => this.storeAll(batch),
    (error, storing) => storing.body.deliveryId !== undefined || rolledBack(error),
  );
  private poll: TimerHandle | undefined;
  private closed = false;
  /** Every process of the schema appends here, a deliveryId once (web_delivery_store's head lock). */
  readonly dedupesDeliveryIds = true;

  private constructor(
    private readonly pool: pg.Pool,
    readonly schema: string,
    private readonly listener: LaneListener,
    private readonly clock: Clock,
    private readonly pollMs: number,
    private readonly keep: number,
  ) {}

  static async connect(options: PostgresDeliveryLogOptions): Promise<PostgresDeliveryLog> {
    const schema = checkSchema(options.schema);
    const keep = keepOption(options);
    const clock = options.clock ?? new SystemClock();
    const pool = createPool(
      { ...options, schema, applicationName: options.applicationName ?? "tiller deliveries" },
      GENERIC_PLANS,
    );
    try {
      await migrate(pool, schema);
    } catch (error) {
      await pool.end();
      throw error;
    }
    let log: PostgresDeliveryLog | undefined;
    const listener = new LaneListener({
      config: clientConfig({
        ...options,
        schema,
        applicationName: `${options.applicationName ?? "tiller"} deliveries`,
      }),
      // Listened on only while a stream here watches a session (see watch).
      channels: [],
      clock,
      onNotify: (_channel, session) => (session === "" ? log?.wakeAll() : log?.wake(session)),
      onReconnect: () => log?.wakeAll(),
    });
    log = new PostgresDeliveryLog(pool, schema, listener, clock, options.pollMs ?? 1000, keep);
    try {
      await listener.start();
    } catch (error) {
      await listener.close();
      await pool.end();
      throw error;
    }
    log.schedulePoll();
    return log;
  }

  append(session: string, body: DeliveryBody): Promise<DeliveryRecord> {
    return this.appends.run(session, () => this.batches.submit({ session, body }));
  }

  async read(session: string): Promise<readonly DeliveryRecord[]> {
    return (await this.pool.query<Row>({ ...ALL, values: [session, this.keptParam()] })).rows.map(toRecord);
  }

  async readAfter(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]> {
    const values = [session, this.keptParam(), after ?? null];
    return (await this.pool.query<Row>({ ...AFTER, values })).rows.map(toRecord);
  }

  /**
   * Wakes `wake` when the session gets a delivery. The schema's channel is listened on only while some
   * session is watched here: a process without streams is not told every delivery of the cluster. Once
   * the first watch's LISTEN is in effect the heads are polled, so a delivery stored before it is read.
   */
  watch(session: string, wake: () => void): () => void {
    if (this.watchers.size === 0 && !this.closed)
      void this.listener.listen(deliveriesChannel(this.schema)).then(() => this.pollHeads());
    let set = this.watchers.get(session);
    if (!set) {
      set = new Set();
      this.watchers.set(session, set);
    }
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.watchers.get(session) === set) {
        this.watchers.delete(session);
        this.heads.delete(session);
        if (this.watchers.size === 0 && !this.closed)
          void this.listener.unlisten(deliveriesChannel(this.schema));
      }
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.poll) this.clock.clearTimeout(this.poll);
    await this.appends.idle();
    await this.listener.close();
    await this.pool.end();
  }

  /** One round trip and one commit for the batch (see STORE_ALL). */
  private async storeAll(batch: readonly Storing[]): Promise<DeliveryRecord[]> {
    const keep = this.keptParam();
    const { rows } = await this.pool.query<Row & { ord: string }>({
      ...STORE_ALL,
      values: [
        batch.map((s) => s.session),
        batch.map((s) => s.body.deliveryId ?? null),
        batch.map(() => nanoid(8)),
        batch.map((s) => s.body.kind),
        batch.map((s) => s.body.text),
        batch.map((s) => s.body.runId ?? null),
        batch.map(() => Date.now()),
        batch.map((s) => notifyPayload(s.session)),
        keep,
        keep === null ? null : pruneStep(keep),
        deliveriesChannel(this.schema),
      ],
    });
    const byPlace = new Map(rows.map((row) => [Number(row.ord) - 1, row]));
    return batch.map((storing, index) => {
      const row = byPlace.get(index);
      if (!row) throw new Error(`web deliveries: the append to ${storing.session} stored nothing`);
      return toRecord(row);
    });
  }

  private keptParam(): number | null {
    return Number.isFinite(this.keep) ? this.keep : null;
  }

  private wake(session: string): void {
    for (const wake of this.watchers.get(session) ?? []) safely(wake);
  }

  private wakeAll(): void {
    for (const set of this.watchers.values()) for (const wake of set) safely(wake);
  }

  private schedulePoll(): void {
    if (this.closed) return;
    this.poll = this.clock.setTimeout(() => {
      this.poll = undefined;
      void this.pollHeads().finally(() => this.schedulePoll());
    }, this.pollMs);
  }

  /**
   * The fallback for a lost NOTIFY: wakes the streams of the watched sessions whose last seq moved
   * since the previous poll (or is not known yet); a failed query wakes them all, as before.
   */
  private async pollHeads(): Promise<void> {
    const sessions = [...this.watchers.keys()];
    if (sessions.length === 0) return;
    let rows: Array<{ session_key: string; last_seq: string }>;
    try {
      rows = (
        await this.pool.query<{ session_key: string; last_seq: string }>({ ...HEADS, values: [sessions] })
      ).rows;
    } catch {
      if (!this.closed) this.wakeAll();
      return;
    }
    const now = new Map(rows.map((row) => [row.session_key, Number(row.last_seq)]));
    for (const session of sessions) {
      const seq = now.get(session) ?? 0;
      if (this.heads.get(session) === seq || !this.watchers.has(session)) continue;
      this.heads.set(session, seq);
      this.wake(session);
    }
  }
}

/** How many appends apart a session is pruned: a delete of at most 100 rows, amortized O(1). */
function pruneStep(keep: number): number {
  return Math.min(keep, 100);
}

/** NOTIFY payloads are limited (8000 bytes): a longer key wakes every stream (empty payload) instead. */
function notifyPayload(session: string): string {
  return Buffer.byteLength(session, "utf8") <= MAX_PAYLOAD_BYTES ? session : "";
}
const MAX_PAYLOAD_BYTES = 1000;

function safely(wake: () => void): void {
  try {
    wake();
  } catch {
    // A broken stream must not stop the others' wake-ups.
  }
}

function toRecord(row: Row): DeliveryRecord {
  return {
    messageId: row.message_id,
    kind: row.kind,
    text: row.text,
    ...(row.run_id !== null ? { runId: row.run_id } : {}),
    ...(row.delivery_id !== null ? { deliveryId: row.delivery_id } : {}),
    at: Number(row.at_ms),
  };
}
