import { nanoid } from "nanoid";
import { ConfigError } from "../errors.js";
import type { DeliveryKind } from "./channel.js";

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
  /**
   * Stores a delivery; with a `deliveryId` already stored for the session, returns that one instead
   * (a pruned one may be stored again, as a new delivery).
   */
  append(session: string, body: DeliveryBody): Promise<DeliveryRecord>;
  /** The session's kept deliveries (the newest `keep`), oldest first; callers must not change it. */
  read(session: string): Promise<readonly DeliveryRecord[]>;
  /**
   * The session's kept deliveries stored after the one whose `messageId` is `after`, oldest first: all
   * of them when `after` is absent or unknown (a pruned one is unknown), so a client that reconnects
   * never misses a kept one. A log
   * without it is read whole (`readDeliveriesAfter`).
   */
  readAfter?(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]>;
  /**
   * For a log shared by several processes: calls `wake` when deliveries to `session` may have been
   * stored elsewhere (a reader then calls `readAfter`). A log of one process leaves it out: the
   * channel that appends wakes its own readers. Returns the unsubscribe.
   */
  watch?(session: string, wake: () => void): () => void;
  /**
   * True only for a log shared by every process that may send to its sessions, whose `append` looks a
   * `deliveryId` up and stores it in one atomic step across all of them; the `web` channel on it then
   * declares `dedupesDeliveryIds` (its sends need no claim). A log of one process leaves it out.
   */
  readonly dedupesDeliveryIds?: boolean;
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

/** How many deliveries a log keeps per session. */
export interface DeliveryLogOptions {
  /**
   * The newest this many deliveries of each session are kept and replayed; older ones are pruned, and
   * an `after` id among them is unknown (the replay starts from the oldest kept). It must be larger
   * than the deliveries a session can make between a send and its resend after a crash (a few), or
   * that resend is stored again. `Infinity` keeps everything.
   * @default 1000
   */
  keep?: number;
}

/** The default of `keep` (and of the config's `web.keepDeliveries`). */
export const DEFAULT_KEEP_DELIVERIES = 1000;

/** `options.keep`, checked: a positive integer or `Infinity`. */
export function keepOption(options: DeliveryLogOptions | undefined): number {
  const keep = options?.keep ?? DEFAULT_KEEP_DELIVERIES;
  if (keep === Number.POSITIVE_INFINITY || (Number.isInteger(keep) && keep > 0)) return keep;
  throw new ConfigError("keep", "a positive integer or Infinity", keep);
}

/** The sequence number of a delivery, the `<seq>` of its `<seq>-<random>` messageId. */
export function deliverySeq(messageId: string): number {
  return Number.parseInt(messageId, 10);
}

/**
 * A session's deliveries in memory, with appends serialized so ids and order follow the stores. It
 * holds between `keep` and `2 × keep` records: once it reaches `2 × keep`, `compact` (the durable
 * part: the file log rewrites its file) runs after that append, and the oldest `keep` are dropped
 * once it has succeeded. Reads see only the newest `keep`, so what a client is sent does not depend
 * on where the log is between two compactions.
 */
export class SessionDeliveries {
  /** Every record held, oldest first (the newest `keep` of them are readable: `kept`). */
  records: DeliveryRecord[] = [];
  private readonly byDeliveryId = new Map<string, DeliveryRecord>();
  private chain: Promise<unknown> = Promise.resolve();
  /** The seq of the newest record: ids stay `<seq>-…` with seq counting on across pruning. */
  private lastSeq = 0;
  /** The durable log holds more than `records` (see the constructor). */
  private behind: boolean;

  constructor(
    initial: DeliveryRecord[] = [],
    private readonly keep = Number.POSITIVE_INFINITY,
    private readonly compact: (kept: readonly DeliveryRecord[]) => Promise<void> = async () => undefined,
  ) {
    // A log loaded with 2 × keep or more (a smaller keep than it was written with) holds only the
    // newest `keep`, and is compacted after the next append.
    this.behind = initial.length >= 2 * keep;
    for (const record of this.behind ? initial.slice(-keep) : initial) this.remember(record);
    // A log written before pruning existed numbered by position, so the count is a floor.
    const last = initial.at(-1);
    this.lastSeq = Math.max(initial.length, last ? deliverySeq(last.messageId) || 0 : 0);
  }

  /** The readable records: the newest `keep`, oldest first. */
  get kept(): readonly DeliveryRecord[] {
    return this.records.length <= this.keep ? this.records : this.records.slice(-this.keep);
  }

  /** Resolves once every append made so far, and the compaction after it, has settled. */
  settled(): Promise<void> {
    return this.chain.then(() => undefined);
  }

  /** Runs `write` (the durable part) for a new record after every earlier append of the session. */
  append(body: DeliveryBody, write: (record: DeliveryRecord) => Promise<void>): Promise<DeliveryRecord> {
    const next = this.chain.then(async () => {
      const known = body.deliveryId === undefined ? undefined : this.byDeliveryId.get(body.deliveryId);
      if (known) return known;
      const record: DeliveryRecord = {
        messageId: `${this.lastSeq + 1}-${nanoid(8)}`,
        kind: body.kind,
        text: body.text,
        ...(body.runId !== undefined ? { runId: body.runId } : {}),
        ...(body.deliveryId !== undefined ? { deliveryId: body.deliveryId } : {}),
        at: Date.now(),
      };
      await write(record);
      this.lastSeq += 1;
      this.remember(record);
      return record;
    });
    // The compaction runs after this append is acknowledged and before the next one is written; a
    // failed one leaves everything in place and is tried again after the next append.
    this.chain = next.then(
      () => this.prune(),
      () => undefined,
    );
    return next;
  }

  private async prune(): Promise<void> {
    if (!this.behind && this.records.length < 2 * this.keep) return;
    const kept = this.records.slice(-this.keep);
    try {
      await this.compact(kept);
    } catch {
      return;
    }
    for (const record of this.records.slice(0, -this.keep))
      if (record.deliveryId !== undefined) this.byDeliveryId.delete(record.deliveryId);
    this.records = kept;
    this.behind = false;
  }

  private remember(record: DeliveryRecord): void {
    this.records.push(record);
    if (record.deliveryId !== undefined) this.byDeliveryId.set(record.deliveryId, record);
  }
}

/** Deliveries kept in memory only: for tests and for gateways on the memory store. */
export class MemoryDeliveryLog implements DeliveryLog {
  private readonly sessions = new Map<string, SessionDeliveries>();
  private readonly keep: number;

  constructor(options?: DeliveryLogOptions) {
    this.keep = keepOption(options);
  }

  async append(session: string, body: DeliveryBody): Promise<DeliveryRecord> {
    return this.entry(session).append(body, async () => undefined);
  }

  async read(session: string): Promise<readonly DeliveryRecord[]> {
    return this.entry(session).kept;
  }

  async readAfter(session: string, after: string | undefined): Promise<readonly DeliveryRecord[]> {
    return recordsAfter(this.entry(session).kept, after);
  }

  async close(): Promise<void> {}

  private entry(session: string): SessionDeliveries {
    let entry = this.sessions.get(session);
    if (!entry) {
      entry = new SessionDeliveries([], this.keep);
      this.sessions.set(session, entry);
    }
    return entry;
  }
}
