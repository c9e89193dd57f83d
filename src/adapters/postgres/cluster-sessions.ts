import type pg from "pg";
import { ConfigError } from "../../errors.js";
import { type Logger, silentLogger } from "../../logger.js";
import type { Clock, TimerHandle } from "../../ports/clock.js";
import type {
  Acceptance,
  InboxEntry,
  InboxMessage,
  SessionCluster,
  SessionPlacement,
} from "../../ports/session-cluster.js";
import { SystemClock } from "../system-clock.js";
import { checkSchema, clientConfig, createPool, GENERIC_PLANS, inTransaction } from "./connection.js";
import type { PostgresConnectionOptions } from "./connection-options.js";
import { InboxMarks } from "./inbox-marks.js";
import { inboxPruneDue } from "./inbox-prune.js";
import { LaneListener } from "./lane-listener.js";
import { migrate } from "./migrate.js";
import * as sql from "./session-sql.js";

/** Options of {@link createClusterSessions}: the database, and how session ownership leases behave. */
export interface ClusterSessionsOptions extends PostgresConnectionOptions {
  /** This process's name in the cluster: the cluster lanes' `processId`. */
  processId: string;
  /** How long an ownership holds without renewal (give the lanes' `leaseMs`). @default 10000 */
  leaseMs?: number;
  /** Renewal interval. @default leaseMs / 3 */
  heartbeatMs?: number;
  /** Poll fallback: missed wake-ups and sessions to take over. @default 500 */
  pollMs?: number;
  /** How long a process that forwarded a message waits for the owner's ack. @default 2000 */
  ackWaitMs?: number;
  /**
   * How long an idle session stays this process's before it is given up: a follow-up within it costs
   * no release and no reading back of the session. @default 2000
   */
  idleHoldMs?: number;
  /** Applied messages stay this long for cluster-wide dedupe. @default 600000 */
  dedupeWindowMs?: number;
  /** @default a `SystemClock` */
  clock?: Clock;
  /** @default a logger that writes nothing */
  logger?: Logger;
}

/** The ownership handle of a cluster process, with the lifecycle the port leaves out. */
export interface ClusterSessions extends SessionCluster {
  /**
   * The token of this process's ownership of `session` (undefined when it does not own it): a
   * `PostgresStore` given it as `fences.ownerFenceFor` refuses this process's state saves for the
   * session once another process has taken it over.
   */
  ownershipFence(session: string): { owner: string; fence: number } | undefined;
  /** Gives every session up and closes the connections. */
  close(): Promise<void>;
}

/** The channel a process LISTENs on for wake-ups and acks (an identifier: at most 63 bytes). */
export function inboxChannel(schema: string, processId: string): string {
  return `${schema.slice(0, 16)}_inbox_${processId}`;
}

/**
 * Session ownership and the durable inbox on PostgreSQL: every message is a row committed before its
 * ack (`UNIQUE (session_key, message_id)`: dedupe cluster-wide), the owner of a session is a row under
 * a lease renewed by heartbeat, and a NOTIFY on the owner's channel only wakes it (it also polls). A
 * session whose owner's lease ran out is taken over, with its waiting messages, by any process.
 *
 * @example
 * ```ts
 * const lanes = await createClusterLanes({ url });
 * const cluster = await createClusterSessions({ url, processId: lanes.processId });
 * const gateway = createGateway({ model, channels, store, lanes, cluster });
 * ```
 */
export async function createClusterSessions(options: ClusterSessionsOptions): Promise<ClusterSessions> {
  const schema = checkSchema(options.schema);
  const { processId } = options;
  const leaseMs = options.leaseMs ?? 10_000;
  const heartbeatMs = options.heartbeatMs ?? Math.floor(leaseMs / 3);
  const pollMs = options.pollMs ?? 500;
  const ackWaitMs = options.ackWaitMs ?? 2000;
  const idleHoldMs = options.idleHoldMs ?? 2000;
  if (typeof idleHoldMs !== "number" || !(idleHoldMs >= 0))
    throw new ConfigError("idleHoldMs", "a number of ms, 0 or more", idleHoldMs);
  const dedupeWindowMs = options.dedupeWindowMs ?? 600_000;
  const clock = options.clock ?? new SystemClock();
  const pruneDue = inboxPruneDue(clock, dedupeWindowMs);
  const logger = options.logger ?? silentLogger;
  const pool = createPool(
    { ...options, schema, applicationName: options.applicationName ?? `tiller ${processId} sessions` },
    GENERIC_PLANS,
  );
  const channel = inboxChannel(schema, processId);
  const listeners = new Set<(session: string, adopted: boolean, polled?: boolean) => void>();
  const lostListeners = new Set<(session: string) => void>();
  /**
   * The sessions this process owns, as far as it knows (the renewal says which it still does), each
   * with the number of its latest taking (a session given up and taken again during a renewal is not
   * lost).
   */
  const owned = new Map<string, number>();
  let takings = 0;
  /** The ownership token of each session this process owns (committed): the store's state saves carry it. */
  const fences = new Map<string, number>();
  /** Acks awaited by this process, by inbox id: woken by a NOTIFY (and by the poll). */
  const ackWaiters = new Map<string, Set<() => void>>();
  let closed = false;
  /** When a renewal or poll last failed (the database away): takeovers wait a lease after it. */
  let failedAt = Number.NEGATIVE_INFINITY;
  const timers = new Set<TimerHandle>();

  const wake = (session: string, adopted: boolean, polled = false) => {
    for (const listener of listeners) listener(session, adopted, polled);
  };

  function notified(payload: string): void {
    const message = JSON.parse(payload) as { wake?: string; ack?: string };
    if (message.wake !== undefined) wake(message.wake, false);
    if (message.ack !== undefined) for (const waiter of ackWaiters.get(message.ack) ?? []) waiter();
  }

  const lockKey = (session: string) => `${schema}:session:${session}`;

  /** One round trip and one transaction: the session's lock, then the accept (sql.ACCEPT). */
  async function accept(message: InboxMessage): Promise<Acceptance> {
    const { rows } = await pool.query<{
      id: string | null;
      owner: string | null;
      live: boolean | null;
      fence: string | null;
      older: number;
      older_ids: string[] | null;
    }>({
      ...sql.ACCEPT,
      values: [
        message.session,
        message.messageId,
        message.mode,
        JSON.stringify(message.body),
        processId,
        leaseMs,
        inboxChannel(schema, ""),
        JSON.stringify({ wake: message.session }),
        lockKey(message.session),
      ],
    });
    const row = rows[0]!;
    if (row.id === null) return { kind: "duplicate" };
    if (row.fence === null) return { kind: "remote", id: row.id, owner: row.owner! };
    owned.set(message.session, ++takings);
    // Known to the store's writes once the ownership is committed, not before.
    fences.set(message.session, Number(row.fence));
    const adopted = !(row.live && row.owner === processId);
    if (row.older === 0) return { kind: "local", id: row.id, adopted, alone: true };
    return {
      kind: "local",
      id: row.id,
      adopted,
      ...(row.older_ids ? { older: row.older_ids.map(String) } : {}),
    };
  }

  async function takeOwner(client: pg.PoolClient, session: string): Promise<number> {
    const { rows } = await client.query<{ fence: string }>(sql.TAKE_OWNER, [session, processId, leaseMs]);
    owned.set(session, ++takings);
    return Number(rows[0]!.fence);
  }

  async function waiting(session: string): Promise<InboxEntry[]> {
    const { rows } = await pool.query<{
      id: string;
      message_id: string;
      mode: string;
      body: Record<string, unknown>;
      received_by: string;
    }>({ ...sql.WAITING, values: [session, processId] });
    return rows.map((row) => ({
      id: row.id,
      session,
      messageId: row.message_id,
      mode: row.mode,
      body: row.body,
      receivedBy: row.received_by,
    }));
  }

  const marks = new InboxMarks(pool, processId, inboxChannel(schema, ""));
  const applied = (entry: InboxEntry, ack: object) => marks.applied(entry.session, entry.id, ack);

  async function ackOf(id: string): Promise<{ ack: Record<string, unknown>; by: string } | undefined> {
    const { rows } = await pool.query<{ ack: Record<string, unknown> | null; taken_by: string | null }>({
      ...sql.ACK_OF,
      values: [id],
    });
    const row = rows[0];
    return row?.ack && row.taken_by ? { ack: row.ack, by: row.taken_by } : undefined;
  }

  async function awaitAck(
    id: string,
    timeoutMs: number,
  ): Promise<{ ack: Record<string, unknown>; by: string } | undefined> {
    const deadline = clock.now() + timeoutMs;
    const waiters = ackWaiters.get(id) ?? new Set();
    ackWaiters.set(id, waiters);
    try {
      for (;;) {
        const ack = await ackOf(id);
        if (ack || closed) return ack;
        const left = deadline - clock.now();
        if (left <= 0) return undefined;
        // The NOTIFY wakes it at once; the short poll covers a lost one.
        await new Promise<void>((resolve) => {
          const timer = clock.setTimeout(done, Math.min(left, 100));
          function done() {
            clock.clearTimeout(timer);
            waiters.delete(done);
            resolve();
          }
          waiters.add(done);
        });
      }
    } finally {
      if (waiters.size === 0) ackWaiters.delete(id);
    }
  }

  /** One round trip and one transaction: the session's lock, then the release (sql.RELEASE). */
  async function release(session: string): Promise<boolean> {
    const { rows } = await pool.query<{ waiting: boolean }>({
      ...sql.RELEASE,
      values: [session, processId, lockKey(session)],
    });
    const waiting = rows[0]!.waiting;
    if (waiting) return false;
    owned.delete(session);
    fences.delete(session);
    return true;
  }

  /** Takes a session nobody live owns; false when someone got there first. */
  async function takeOver(session: string): Promise<boolean> {
    return inTransaction(pool, async (client): Promise<number | false> => {
      await client.query(sql.LOCK_SESSION, [lockKey(session)]);
      const owner = (await client.query<{ live: boolean }>(sql.OWNER_OF, [session])).rows[0];
      if (owner?.live) return false;
      return takeOwner(client, session);
    }).then((fence) => {
      if (fence === false) return false;
      fences.set(session, fence);
      return true;
    });
  }

  /** Renews a lapsed ownership under its token, under the session's lock (see sql.RETAKE). */
  async function retake(session: string, fence: number): Promise<boolean> {
    return inTransaction(pool, async (client) => {
      await client.query(sql.LOCK_SESSION, [lockKey(session)]);
      const { rows } = await client.query(sql.RETAKE, [session, processId, fence, leaseMs]);
      return rows.length > 0;
    });
  }

  async function heartbeat(): Promise<void> {
    const before = new Map(owned);
    const { rows } = await pool.query<{ session_key: string }>({
      ...sql.RENEW,
      values: [processId, leaseMs],
    });
    const renewed = new Set(rows.map((row) => row.session_key));
    // Owned when the renewal was sent and not renewed by it: the lease had run out.
    for (const [session, taking] of before) {
      if (renewed.has(session) || owned.get(session) !== taking) continue;
      // Nobody took it meanwhile (the lease ran out while the database was away, say): still this
      // process's under the same token, so its live state here is still the session's latest.
      const fence = fences.get(session);
      if (fence !== undefined && (await retake(session, fence))) continue;
      // Given up or taken again here while the renewal ran: not lost.
      if (owned.get(session) !== taking) continue;
      owned.delete(session);
      fences.delete(session);
      logger.warn({ processId, session }, "cluster sessions: ownership lost");
      for (const listener of lostListeners) listener(session);
    }
  }

  async function poll(): Promise<void> {
    if (listeners.size === 0) return;
    const own = await pool.query<{ session_key: string }>({ ...sql.OWN_WAITING, values: [processId] });
    for (const row of own.rows) wake(row.session_key, false, true);
    // Just back from an outage, every lease has run out: live owners renew theirs first (their
    // heartbeats come within a lease), so only the sessions of processes really gone are taken.
    if (clock.now() - failedAt >= leaseMs) {
      const orphans = await pool.query<{ session_key: string }>(sql.ORPHANS);
      for (const row of orphans.rows) if (await takeOver(row.session_key)) wake(row.session_key, true);
    }
    if (pruneDue()) await pool.query({ ...sql.PRUNE, values: [dedupeWindowMs] });
  }

  function loop(every: number, step: () => Promise<void>, what: string): void {
    const tick = () => {
      if (closed) return;
      step()
        .catch((error: unknown) => {
          failedAt = clock.now();
          if (!closed) logger.warn({ err: error, processId }, `cluster sessions: ${what} failed`);
        })
        .finally(() => {
          if (closed) return;
          const timer = clock.setTimeout(() => {
            timers.delete(timer);
            tick();
          }, every);
          timers.add(timer);
        });
    };
    tick();
  }

  await migrate(pool, schema);
  const listener = new LaneListener({
    config: clientConfig({ ...options, schema, applicationName: `tiller ${processId} inbox` }),
    channels: [channel],
    clock,
    onNotify: (_channel, payload) => notified(payload),
    onReconnect: () => {
      for (const waiters of ackWaiters.values()) for (const waiter of waiters) waiter();
    },
  });
  await listener.start();
  loop(heartbeatMs, heartbeat, "renewal");
  loop(pollMs, poll, "poll");

  return {
    ownershipFence(session) {
      const fence = fences.get(session);
      return fence === undefined ? undefined : { owner: processId, fence };
    },
    processId,
    ackWaitMs,
    idleHoldMs,
    accept,
    waiting,
    applied,
    async forget(id: string) {
      await pool.query({ ...sql.FORGET, values: [id] });
    },
    awaitAck,
    release,
    async owners(sessions: readonly string[]) {
      if (sessions.length === 0) return new Map();
      const { rows } = await pool.query<{ session_key: string; owner: string }>({
        ...sql.OWNERS,
        values: [sessions],
      });
      return new Map(rows.map((row) => [row.session_key, row.owner]));
    },
    async placements(sessions: readonly string[]) {
      if (sessions.length === 0) return new Map();
      const { rows } = await pool.query<{
        session_key: string;
        owner: string | null;
        running_on: string | null;
        lane: string | null;
        queued: number;
        capacity: number | null;
      }>({ ...sql.PLACEMENTS, values: [sessions] });
      return new Map(
        rows.map((row): [string, SessionPlacement] => [
          row.session_key,
          {
            owner: row.owner,
            runningOn: row.running_on && row.lane ? { process: row.running_on, lane: row.lane } : null,
            queued: row.queued,
            capacity: row.capacity,
          },
        ]),
      );
    },
    onWake(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onLost(listener) {
      lostListeners.add(listener);
      return () => lostListeners.delete(listener);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clock.clearTimeout(timer);
      for (const waiters of ackWaiters.values()) for (const waiter of waiters) waiter();
      await listener.close();
      await pool.query(sql.LEAVE, [processId]).catch(() => {});
      await pool.end();
    },
  };
}
