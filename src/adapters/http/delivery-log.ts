import { nanoid } from "nanoid";
import type { DeliveryKind } from "../channel.js";

/** One delivery of the `web` channel, as stored and as streamed to the session's clients. */
export interface DeliveryRecord {
  /** The receipt's id, unique in the session; the SSE `id:` of the delivery. */
  messageId: string;
  kind: DeliveryKind;
  text: string;
  runId?: string;
  /** The gateway's id of the logical delivery, when it gave one: a second send with it is a duplicate. */
  deliveryId?: string;
  /** Wall-clock time of the store (ms since the epoch). */
  at: number;
}

export type DeliveryBody = Omit<DeliveryRecord, "messageId" | "at">;

/**
 * Where the `web` channel keeps what it delivered, per session, so a client that reconnects (or a
 * server that restarts) can replay what was missed. `append` resolves only once the record is durable.
 *
 * @example
 * ```ts
 * const log = new MemoryDeliveryLog();
 * const record = await log.append("web:1", { kind: "reply", text: "hi" });
 * (await log.read("web:1")).length; // 1
 * ```
 */
export interface DeliveryLog {
  /** Stores a delivery; with a `deliveryId` already stored for the session, returns that one instead. */
  append(session: string, body: DeliveryBody): Promise<DeliveryRecord>;
  /** Every delivery of the session, oldest first (the live array: callers must not change it). */
  read(session: string): Promise<readonly DeliveryRecord[]>;
  /**
   * The session's deliveries stored after the one whose `messageId` is `after`, oldest first: all of
   * them when `after` is absent or unknown, so a client that reconnects never misses one. A log
   * without it is read whole (`readDeliveriesAfter`).
   */
  readAfter?(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]>;
  /**
   * For a log shared by several processes: calls `wake` when deliveries to `session` may have been
   * stored elsewhere (a reader then calls `readAfter`). A log of one process leaves it out: the
   * channel that appends wakes its own readers. Returns the unsubscribe.
   */
  watch?(session: string, wake: () => void): () => void;
  close(): Promise<void>;
}

/** A session's deliveries after `after` from any log, with or without its own `readAfter`. */
export async function readDeliveriesAfter(
  log: DeliveryLog,
  session: string,
  after: string | undefined,
): Promise<readonly DeliveryRecord[]> {
  return log.readAfter ? log.readAfter(session, after) : recordsAfter(await log.read(session), after);
}

/** The records after the one with `messageId` `after` (all when absent or unknown). */
export function recordsAfter(
  records: readonly DeliveryRecord[],
  after: string | undefined,
): readonly DeliveryRecord[] {
  if (after === undefined) return records.slice();
  return records.slice(records.findLastIndex((record) => record.messageId === after) + 1);
}

/** A session's deliveries in memory, with appends serialized so ids and order follow the stores. */
export class SessionDeliveries {
  readonly records: DeliveryRecord[] = [];
  private readonly byDeliveryId = new Map<string, DeliveryRecord>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(initial: DeliveryRecord[] = []) {
    for (const record of initial) this.remember(record);
  }

  /** Runs `write` (the durable part) for a new record after every earlier append of the session. */
  append(body: DeliveryBody, write: (record: DeliveryRecord) => Promise<void>): Promise<DeliveryRecord> {
    const next = this.chain.then(async () => {
      const known = body.deliveryId === undefined ? undefined : this.byDeliveryId.get(body.deliveryId);
      if (known) return known;
      const record: DeliveryRecord = {
        messageId: `${this.records.length + 1}-${nanoid(8)}`,
        kind: body.kind,
        text: body.text,
        ...(body.runId !== undefined ? { runId: body.runId } : {}),
        ...(body.deliveryId !== undefined ? { deliveryId: body.deliveryId } : {}),
        at: Date.now(),
      };
      await write(record);
      this.remember(record);
      return record;
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  private remember(record: DeliveryRecord): void {
    this.records.push(record);
    if (record.deliveryId !== undefined) this.byDeliveryId.set(record.deliveryId, record);
  }
}

/** Deliveries kept in memory only: for tests and for gateways on the memory store. */
export class MemoryDeliveryLog implements DeliveryLog {
  private readonly sessions = new Map<string, SessionDeliveries>();

  async append(session: string, body: DeliveryBody): Promise<DeliveryRecord> {
    return this.entry(session).append(body, async () => undefined);
  }

  async read(session: string): Promise<readonly DeliveryRecord[]> {
    return this.entry(session).records;
  }

  async readAfter(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]> {
    return recordsAfter(this.entry(session).records, after);
  }

  async close(): Promise<void> {}

  private entry(session: string): SessionDeliveries {
    let entry = this.sessions.get(session);
    if (!entry) {
      entry = new SessionDeliveries();
      this.sessions.set(session, entry);
    }
    return entry;
  }
}
