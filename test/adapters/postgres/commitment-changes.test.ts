import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { CommitmentBook } from "../../../src/gateway/commitments/commitment-book.js";
import type { Commitment } from "../../../src/machines/commitment.types.js";
import type { StoredCommitment } from "../../../src/ports/store.js";
import { usePostgresSchema } from "../../support/postgres.js";

// The heartbeat's refresh on a shared PostgreSQL reads only the commitments written since its last
// read: another process's new commitment, status change and dismissal after one refresh, no row at all
// when nothing changed, and never a write that commits after a later-numbered one was read.

const db = usePostgresSchema("changes");
const HOUR = 3_600_000;

function commitment(n: number, change: Partial<Commitment> = {}): Commitment {
  return {
    id: `c_${n}`,
    session: `web:${n % 3}`,
    kind: "open_loop",
    source: "tool",
    reason: `Asked about ${n}.`,
    suggestedText: `About ${n}?`,
    dedupeKey: `k${n}`,
    confidence: 0.9,
    dueWindow: { earliestAt: HOUR, latestAt: 13 * HOUR },
    createdAt: 0,
    updatedAt: 0,
    status: "pending",
    dueAt: HOUR,
    attempts: 0,
    expiresAt: 85 * HOUR,
    ...change,
  };
}
const stored = (c: Commitment) => c as unknown as StoredCommitment;

let a: PostgresStore;
let b: PostgresStore;
beforeAll(async () => {
  a = await PostgresStore.connect({ url: db.url, schema: db.schema, processId: "pa", poolSize: 2 });
  b = await PostgresStore.connect({ url: db.url, schema: db.schema, processId: "pb", poolSize: 2 });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

describe("commitment change feed on PostgreSQL", () => {
  it("takes in another process's new commitment, status change and dismissal after one refresh", async () => {
    await b.saveCommitments([stored(commitment(1)), stored(commitment(2))]);
    const book = new CommitmentBook(a);
    expect((await book.load()).map((c) => c.id)).toEqual(["c_1", "c_2"]);
    // Nothing written since the load: the refresh reads no row.
    expect(await book.refresh()).toBe(0);

    // Another process makes one.
    await b.saveCommitments([stored(commitment(3, { dueAt: 2 * HOUR }))]);
    expect(await book.refresh()).toBe(1);
    expect(book.get("c_3")).toMatchObject({ status: "pending", dueAt: 2 * HOUR });
    expect(book.index.nextDueAt()).toBe(HOUR);
    expect(await book.refresh()).toBe(0);

    // It sends one and dismisses another (an operator): both leave the due index here.
    await b.saveCommitments([
      stored(commitment(1, { status: "sent", sent: { at: HOUR, text: "Still?", receipt: "committed" } })),
    ]);
    await b.saveCommitments([stored(commitment(2, { status: "dismissed", dismissedWhy: "operator" }))]);
    expect(await book.refresh()).toBe(2);
    expect(book.get("c_1")?.status).toBe("sent");
    expect(book.sentInWindow("web:1", 2 * HOUR)).toBe(1);
    expect(book.get("c_2")).toMatchObject({ status: "dismissed", dismissedWhy: "operator" });
    expect(book.index.nextDueAt()).toBe(2 * HOUR);
    expect(await book.refresh()).toBe(0);

    // This process's own write comes back once (it is a change like any other), then nothing.
    await book.put(commitment(3, { dueAt: 3 * HOUR, attempts: 1 }));
    expect(await book.refresh()).toBe(1);
    expect(await book.refresh()).toBe(0);
    // A claim changes no record: nothing to read either.
    expect(await b.claimCommitment("c_3", 3 * HOUR)).toMatchObject({ claimed: true });
    expect(await book.refresh()).toBe(0);
  });

  it("never skips a write that commits after a later one was read", async () => {
    const book = new CommitmentBook(a);
    await book.load();
    // A write in flight: it took its change number and holds it, uncommitted (as a slow save would).
    const slow = new pg.Client({ connectionString: db.url, options: `-c search_path=${db.schema}` });
    await slow.connect();
    try {
      const slowPid = (await slow.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      await slow.query("BEGIN");
      const { rows } = await slow.query<{ seq: string }>(
        "UPDATE commitment_changes SET last_seq = last_seq + 1 WHERE id = 1 RETURNING last_seq AS seq",
      );
      await slow.query(
        `INSERT INTO commitments (id, session_key, dedupe_key, status, due_ms, sending, body, change_seq)
         VALUES ('c_10', 'web:1', 'k10', 'pending', $1, false, $2, $3)`,
        [HOUR, JSON.stringify(commitment(10)), rows[0]!.seq],
      );
      // Another process's save meanwhile waits for the number (it cannot get a later one first) ...
      const later = b.saveCommitments([stored(commitment(11))]);
      const blocked = async () => {
        const { rows: waiting } = await db.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))",
          [slowPid],
        );
        return (waiting[0]?.n ?? 0) > 0;
      };
      await Promise.race([later, waitFor(blocked)]);
      // ... so a refresh now sees neither, and moves its cursor past neither.
      expect(await book.refresh()).toBe(0);
      await slow.query("COMMIT");
      await later;
      expect(await book.refresh()).toBe(2);
      expect(book.get("c_10")?.status).toBe("pending");
      expect(book.get("c_11")?.status).toBe("pending");
    } finally {
      await slow.end();
    }
  });

  it("reads every stored commitment without a cursor, and refuses a cursor it never gave", async () => {
    const all = await a.loadCommitmentChanges(undefined);
    expect(all.records.map((r) => r.id)).toEqual((await a.loadCommitments()).map((r) => r.id));
    expect(await a.loadCommitmentChanges(all.cursor)).toEqual({ records: [], cursor: all.cursor });
    await expect(a.loadCommitmentChanges("'; DROP TABLE commitments; --")).rejects.toMatchObject({
      code: "STORE_FAILED",
    });
  });
});

/** Polls the database until `check` holds (a real lock wait has no event to await). */
async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the save to wait for the lock");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
