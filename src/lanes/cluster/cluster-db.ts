import type pg from "pg";
import type { LaneGroupSpec } from "../lane-groups.js";
import { CLAIM_GROUP, LOCK_GROUP } from "./claim-group-sql.js";
import * as sql from "./claim-sql.js";
import { grantChannel, toldGrants } from "./grant-channel.js";

/** A row the claim granted: to whom, for which of its tasks, under which token. */
export interface Grant {
  id: string;
  owner: string;
  localId: number;
  fence: number;
  session: string;
  /** Lease left when the database answered (ms); a claim's own grants have the whole lease. */
  remainingMs: number;
}

/** Where a waiting row stands: rows ahead of and behind it in its lane, runs in the lane, its session busy. */
export interface WaitPosition {
  queueAhead: number;
  queueBehind: number;
  activeNow: number;
  sessionBusy: boolean;
}

interface GrantRow {
  id: string;
  owner: string;
  local_id: string;
  fence: string;
  session_key: string;
}

const UNIQUE_VIOLATION = "23505";

/**
 * The cluster lanes' statements (lane-sql.ts) on one pool, for one process: what the scheduler needs
 * from the database and nothing of its local bookkeeping.
 */
export class ClusterDb {
  constructor(
    readonly pool: pg.Pool,
    readonly schema: string,
    readonly processId: string,
    readonly leaseMs: number,
    /** A waiting row rises one priority level per this many ms waited (0: no aging). */
    readonly agingMs = 0,
    /**
     * The cadence of every process's renewals (their heartbeat; `pollMs`: its slack). Given, this one
     * grants slots to another only while that one renews on time (a process that missed a renewal
     * may be dead: see RUNNABLE), until two heartbeats after its last renewal (see GRANT_LEASE).
     * Unset: to any process within its lease, for a full lease.
     */
    renewals?: { heartbeatMs: number; pollMs: number },
  ) {
    this.grantAheadMs = renewals ? Math.max(0, leaseMs - renewals.heartbeatMs - renewals.pollMs) : 0;
    this.remoteGrantMs = renewals ? Math.min(leaseMs, 2 * renewals.heartbeatMs) : leaseMs;
    // A grant told by another process has at least this left when made (see RUNNABLE, GRANT_LEASE).
    this.toldLeaseMs = renewals ? Math.max(1, this.remoteGrantMs - leaseMs + this.grantAheadMs) : leaseMs;
  }

  /** How far ahead another process's `alive_until` must reach for this one to grant it a slot. */
  private readonly grantAheadMs: number;
  /** How long after its last renewal a slot granted to another process stays leased to it. */
  private readonly remoteGrantMs: number;
  private readonly toldLeaseMs: number;

  /** The grants another process's claim sent with its wake-up (see toldGrants). */
  told(payload: string): Grant[] | undefined {
    return toldGrants(payload, this.processId, this.toldLeaseMs);
  }

  /** Enqueues in order; returns each task's row id by its local id. */
  async enqueue(tasks: Array<{ id: number; lane: string; sessionKey: string; priorityLevel: number }>) {
    const { rows } = await this.query<{ id: string; local_id: string }>("enqueue", sql.ENQUEUE, [
      tasks.map((t) => t.lane),
      tasks.map((t) => t.sessionKey),
      tasks.map((t) => t.priorityLevel),
      this.processId,
      tasks.map((t) => t.id),
    ]);
    return rows.map((row) => ({ rowId: row.id, localId: Number(row.local_id) }));
  }

  /** How many tasks run now in these lanes, all processes together (a capacity group's count). */
  async activeIn(lanes: readonly string[]): Promise<number> {
    const { rows } = await this.query<{ n: number }>("activeIn", sql.ACTIVE_IN, [lanes]);
    return rows[0]?.n ?? 0;
  }

  /** Where the given waiting rows stand in their lanes (rows no longer waiting are left out). */
  async waitPositions(rowIds: string[]): Promise<Map<string, WaitPosition>> {
    const { rows } = await this.query<{
      id: string;
      ahead: string;
      behind: string;
      active_now: string;
      session_busy: boolean;
    }>("waitPositions", sql.WAIT_POSITIONS, [rowIds, this.agingMs]);
    return new Map(
      rows.map((row) => [
        row.id,
        {
          queueAhead: Number(row.ahead),
          queueBehind: Number(row.behind),
          activeNow: Number(row.active_now),
          sessionBusy: row.session_busy,
        },
      ]),
    );
  }

  /**
   * One claim pass on a lane: under the lane's advisory lock, grants its free slots (to any process),
   * and wakes the other processes it granted to. Undefined when another lane's pass granted the same
   * session first (the unique index refused it): then the pass should simply run again. It goes in one
   * round trip: one call of claim_quick (CLAIM_QUICK_CALL), in autocommit, takes the lock, ends `ends`,
   * claims and wakes in one transaction. Since migration 16 its choice is always the full claim's (it
   * walks the lane's classes to its last free slot), so its `proven` is not read here.
   */
  async claim(
    lane: string,
    defaultCapacity: number,
    ends: readonly RunEnd[] = [],
    news: readonly NewRun[] = [],
  ): Promise<Grant[] | undefined> {
    return this.inClaim(async (client) => {
      // Runs of this lane that ended here go in the same transaction, before the claim counts the
      // active rows: their slots are granted again in the same round trip. New waiting rows too: they
      // are written first, and a free slot is granted in the round trip that wrote its row.
      const adding = news.length > 0;
      const { rows } = await client.query<GrantRow & { new_ids?: string[] }>({
        name: adding ? "tiller.enqueueClaim" : "tiller.claimQuick",
        text: adding ? sql.ENQUEUE_CLAIM_CALL : sql.CLAIM_QUICK_CALL,
        values: [
          this.lockKey(lane),
          ends.map((end) => end.rowId),
          ends.map((end) => end.fence),
          lane,
          defaultCapacity,
          this.agingMs,
          // The class window: no longer read since migration 16 (the claim walks to its last slot).
          0,
          this.leaseMs,
          this.processId,
          this.grantAheadMs,
          this.remoteGrantMs,
          grantChannel(this.schema, ""),
          ...(adding
            ? [
                news.map((run) => run.sessionKey),
                news.map((run) => run.priorityLevel),
                news.map((run) => run.id),
              ]
            : []),
        ],
      });
      // Committed with the statement: each new row's id, whatever the claim granted.
      const ids = rows[0]?.new_ids ?? [];
      for (const [index, run] of news.entries()) if (ids[index] != null) run.rowId = String(ids[index]);
      return this.grants(rows.filter((row) => row.id !== null));
    });
  }

  /** Wakes, at commit, every other process that `rows` granted a slot to. */
  private async wakeGranted(client: pg.PoolClient, rows: GrantRow[]): Promise<void> {
    const others = [...new Set(rows.map((r) => r.owner).filter((owner) => owner !== this.processId))];
    if (others.length > 0)
      await client.query({
        name: "tiller.lanes.notifyOwners",
        text: sql.NOTIFY_OWNERS,
        values: [others.map((owner) => grantChannel(this.schema, owner))],
      });
  }

  /**
   * Runs a statement on the pool, prepared once per connection (named): its plan is kept, not made
   * again on every call (see docs/postgres.md, "What a turn costs the database").
   */
  private query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[] = []) {
    return this.pool.query<R>({ name: `tiller.lanes.${name}`, text, values });
  }

  private lockKey(lane: string): string {
    return `${this.schema}:lane:${lane}`;
  }

  /**
   * A claim pass on the lane, or on its capacity group when it has one. `ends`: runs of the lane that
   * ended here, whose rows go in the pass's transaction (a lane of no group only).
   */
  claimLaneOrGroup(
    lane: string,
    group: LaneGroupSpec | undefined,
    capacityOf: (lane: string) => number,
    ends: readonly RunEnd[] = [],
    news: readonly NewRun[] = [],
  ): Promise<Grant[] | undefined> {
    return group ? this.claimGroup(group, capacityOf) : this.claim(lane, capacityOf(lane), ends, news);
  }

  /**
   * One claim pass on a capacity group: under the group's lock, grants free slots of its lanes by
   * priority then enqueue order across them, never more than the group's capacity minus its active
   * rows, nor more than a lane's own free slots, and wakes the other processes it granted to.
   * `capacityOf`: a lane's capacity when none is stored. Undefined as for `claim`.
   */
  async claimGroup(group: LaneGroupSpec, capacityOf: (lane: string) => number): Promise<Grant[] | undefined> {
    return this.inClaim(async (client) => {
      await client.query("BEGIN");
      await client.query({
        name: "tiller.lanes.lockGroup",
        text: LOCK_GROUP,
        values: [`${this.schema}:group:${group.name}`],
      });
      const { rows } = await client.query<GrantRow>({
        name: "tiller.claimGroup",
        text: CLAIM_GROUP,
        values: [
          group.lanes,
          group.lanes.map(capacityOf),
          this.leaseMs,
          this.agingMs,
          group.capacity,
          this.processId,
          this.grantAheadMs,
          this.remoteGrantMs,
        ],
      });
      await this.wakeGranted(client, rows);
      await client.query("COMMIT");
      return this.grants(rows);
    });
  }

  /**
   * Runs one claim pass on a connection of its own. Undefined when the unique index refused a grant
   * (another lane's pass granted the same session first): the pass should simply run again.
   */
  private async inClaim(pass: (client: pg.PoolClient) => Promise<Grant[]>): Promise<Grant[] | undefined> {
    const client = await this.pool.connect();
    try {
      return await pass(client);
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) return undefined;
      throw error;
    } finally {
      client.release();
    }
  }

  private grants(rows: GrantRow[]): Grant[] {
    return rows.map((row) => ({
      id: row.id,
      owner: row.owner,
      localId: Number(row.local_id),
      fence: Number(row.fence),
      session: row.session_key,
      remainingMs: this.leaseMs,
    }));
  }

  /** This process's grants (after a wake-up, or on the poll). */
  async myGrants(): Promise<Grant[]> {
    const { rows } = await this.query<{
      id: string;
      local_id: string;
      fence: string;
      session_key: string;
      remaining: number;
    }>("myGrants", sql.MY_GRANTS, [this.processId]);
    return rows.map((row) => ({
      id: row.id,
      owner: this.processId,
      localId: Number(row.local_id),
      fence: Number(row.fence),
      session: row.session_key,
      remainingMs: Number(row.remaining),
    }));
  }

  /** Ends a run; returns its lane when this token still held it. */
  async complete(rowId: string, fence: number): Promise<string | undefined> {
    const { rows } = await this.query<{ lane: string }>("complete", sql.COMPLETE, [rowId, fence]);
    return rows[0]?.lane;
  }

  /** Which of these rows still exist (a reaper may have dropped a waiting row during an outage). */
  async existing(rowIds: string[]): Promise<Set<string>> {
    const { rows } = await this.query<{ id: string }>(
      "existing",
      "SELECT id FROM lane_runs WHERE id = ANY($1::bigint[])",
      [rowIds],
    );
    return new Set(rows.map((row) => String(row.id)));
  }

  async dequeue(rowIds: string[]): Promise<void> {
    await this.query("dequeue", sql.DEQUEUE, [rowIds]);
  }

  /** Keeps this process alive; renews the grants of rows `live` (still running or waiting here). */
  async heartbeat(live: string[]): Promise<Grant[]> {
    const { rows } = await this.query<{
      id: string;
      fence: string;
      local_id: string;
      session_key: string;
    }>("heartbeat", sql.HEARTBEAT, [this.processId, this.leaseMs, { pid: process.pid }, live]);
    return rows.map((row) => ({
      id: row.id,
      owner: this.processId,
      localId: Number(row.local_id),
      fence: Number(row.fence),
      session: row.session_key,
      remainingMs: this.leaseMs,
    }));
  }

  async reap(): Promise<
    Array<{ kind: "expired" | "orphan"; lane: string; session: string | null; owner: string | null }>
  > {
    const { rows } = await this.query("reap", sql.REAP);
    return rows.map((row) => ({
      kind: row.kind,
      lane: row.lane,
      session: row.session_key,
      owner: row.owner,
    }));
  }

  async laneCounts(): Promise<Array<{ lane: string; capacity: number; active: number; queued: number }>> {
    const { rows } = await this.query("laneCounts", sql.LANE_COUNTS);
    return rows.map((row) => ({
      lane: row.lane,
      capacity: row.capacity,
      active: Number(row.active),
      queued: Number(row.queued),
    }));
  }

  async setCapacity(lane: string, capacity: number): Promise<void> {
    await this.query("setCapacity", sql.SET_CAPACITY, [lane, capacity]);
  }

  /** Leaves the cluster: this process's rows, then its membership. */
  async leave(): Promise<void> {
    await this.query("leave", sql.LEAVE, [this.processId]);
  }
}

/** A task enqueued here whose row a claim pass writes; the pass sets `rowId`. */
export interface NewRun {
  readonly id: number;
  readonly sessionKey: string;
  readonly priorityLevel: number;
  rowId?: string | undefined;
}

/** A run that ended: its row and the token it held it with. */
export interface RunEnd {
  rowId: string;
  fence: number;
}
