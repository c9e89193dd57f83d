import fc from "fast-check";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { migrate } from "../../../src/adapters/postgres/migrate.js";
import * as sql from "../../../src/lanes/cluster/claim-sql.js";
import { usePostgresSchema } from "../../support/postgres.js";

// The claim the lanes run (claim_quick: a walk over the lane's priority classes that stops at its last
// free slot) must grant exactly the rows the full pass over every waiting row grants, and say so
// (`proven`), whatever the queue holds: several lanes, sessions with a run active or rows in two
// lanes, dead processes, rows aged to any level, any window (no longer read). Both run on the same
// state inside a transaction that is rolled back.

const db = usePostgresSchema("claimwindow");
const AGING_MS = 1000;

interface Row {
  lane: "main" | "cron";
  session: number;
  priority: 0 | 1 | 2;
  owner: "pa" | "pb" | "pdead";
  active: boolean;
}

const rowArb = fc.record({
  lane: fc.constantFrom<"main" | "cron">("main", "main", "main", "cron"),
  session: fc.integer({ min: 1, max: 8 }),
  priority: fc.constantFrom<0 | 1 | 2>(0, 1, 2),
  owner: fc.constantFrom<"pa" | "pb" | "pdead">("pa", "pa", "pb", "pdead"),
  active: fc.integer({ min: 0, max: 9 }).map((n) => n < 3),
});

beforeAll(() => migrate(db.pool, db.schema));

async function choices(rows: Row[], ages: number[], capacity: number, window: number) {
  const client = await db.pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(`SET LOCAL search_path TO ${db.schema}`);
    await client.query(`INSERT INTO processes (process_id, alive_until) VALUES
      ('pa', now() + interval '1 hour'), ('pb', now() + interval '1 hour'), ('pdead', now() - interval '1 hour')`);
    await client.query("INSERT INTO lane_capacity (lane, capacity) VALUES ('main', $1)", [capacity]);
    const activeSessions = new Set<number>();
    const activeAt = new Set<number>();
    for (const [index, row] of rows.entries()) {
      // One active run per session at most (the unique index): later ones wait.
      const active = row.active && !activeSessions.has(row.session);
      if (active) activeSessions.add(row.session);
      if (active) activeAt.add(index);
      await client.query(
        `INSERT INTO lane_runs (lane, session_key, priority, state, owner, local_id, enqueued_at)
         VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp() - $7 * interval '1 millisecond')`,
        [
          row.lane,
          `s${row.session}`,
          row.priority,
          active ? "active" : "queued",
          row.owner,
          index,
          ages[index],
        ],
      );
    }
    await client.query("SAVEPOINT before");
    const full = await client.query<{ id: string }>(sql.CLAIM, [
      "main",
      1,
      60_000,
      AGING_MS,
      "pa",
      0,
      60_000,
    ]);
    await client.query("ROLLBACK TO SAVEPOINT before");
    const quick = await client.query<{ proven: boolean; id: string | null }>(sql.CLAIM_QUICK_CALL, [
      "claimwindow:main",
      [],
      [],
      "main",
      1,
      AGING_MS,
      window,
      60_000,
      "pa",
      0,
      60_000,
      "claimwindow_grant_",
    ]);
    return {
      free: Math.max(
        0,
        capacity - rows.filter((row, index) => row.lane === "main" && activeAt.has(index)).length,
      ),
      full: full.rows.map((row) => row.id).sort(),
      quick: quick.rows.flatMap((row) => (row.id === null ? [] : [row.id])).sort(),
      proven: quick.rows[0]!.proven,
    };
  } finally {
    await client.query("ROLLBACK").catch(() => {});
    client.release();
  }
}

describe("the claim the lanes run", () => {
  it("grants exactly what the full pass grants, and says its choice is proven", async () => {
    let granted = 0;
    let passedOver = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(rowArb, { minLength: 0, maxLength: 30 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        async (rows, capacity, window) => {
          // Older rows first: the age falls as the id grows (as enqueue order gives them), across
          // several aging periods so rows reach every level.
          const ages = rows.map((_, index) =>
            Math.round(((rows.length - index) / rows.length) * 3.5 * AGING_MS),
          );
          const result = await choices(rows, ages, capacity, window);
          expect(result.proven).toBe(true);
          expect(result.quick).toEqual(result.full);
          if (result.full.length > 0) granted++;
          // A waiting row of the lane the claim did not take while it had a slot left: the walk passed
          // over it (its session busy or its process dead), and must have looked further.
          const waiting = rows.filter((row) => row.lane === "main").length;
          if (result.full.length < result.free && result.full.length < waiting) passedOver++;
        },
      ),
      { numRuns: 300, seed: 20261201 },
    );
    // Grants were made, and rows were passed over with slots left.
    expect(granted).toBeGreaterThan(100);
    expect(passedOver).toBeGreaterThan(20);
  }, 120_000);

  it("answers proven with no grant when the row it picked is taken back before its grant", async () => {
    const holder = await db.pool.connect();
    const claimer = await db.pool.connect();
    try {
      await holder.query(`SET search_path TO ${db.schema}`);
      await claimer.query(`SET search_path TO ${db.schema}`);
      const claimerPid = (await claimer.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!
        .pid;
      await holder.query(`INSERT INTO processes (process_id, alive_until) VALUES ('pa', now() + interval '1 hour')
        ON CONFLICT (process_id) DO UPDATE SET alive_until = excluded.alive_until`);
      const { rows } = await holder.query<{ id: string }>(
        `INSERT INTO lane_runs (lane, session_key, priority, state, owner, local_id)
         VALUES ('gone', 'sg', 1, 'queued', 'pa', 1) RETURNING id`,
      );
      // The caller's take-back holds the row while the claim walks to it and waits to grant it.
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM lane_runs WHERE id = $1 FOR UPDATE", [rows[0]!.id]);
      const claim = claimer.query<{ proven: boolean; id: string | null }>(sql.CLAIM_QUICK_CALL, [
        "claimwindow:gone",
        [],
        [],
        "gone",
        1,
        AGING_MS,
        1,
        60_000,
        "pa",
        0,
        60_000,
        "claimwindow_grant_",
      ]);
      // Waiting on the row lock: the claim has picked the row.
      await vi.waitFor(async () => {
        const waiting = await db.pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'",
          [claimerPid],
        );
        expect(waiting.rowCount).toBeGreaterThan(0);
      });
      await holder.query("DELETE FROM lane_runs WHERE id = $1", [rows[0]!.id]);
      await holder.query("COMMIT");
      const answer = await claim;
      expect(answer.rows).toEqual([expect.objectContaining({ proven: true, id: null })]);
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
      claimer.release();
    }
  });
});
