import { describe, expect, it } from "vitest";
import { createPool } from "../../../src/adapters/postgres/connection.js";
import { migrate } from "../../../src/adapters/postgres/migrate.js";
import { ORPHANS } from "../../../src/adapters/postgres/session-sql.js";
import { usePostgresSchema } from "../../support/postgres.js";

// Every process looks for sessions left with work and no live owner twice a second. With many idle
// sessions that look must not read every session's state: it did, 150 ms a poll at 100k sessions.

const db = usePostgresSchema("orphans");

const SETTLED = JSON.stringify({ version: 1, queue: [], pending: null, override: null });
const QUEUED = JSON.stringify({ version: 1, queue: [{ id: "m1", text: "later" }], pending: null });
const PENDING = JSON.stringify({ version: 1, queue: [], pending: { runId: "r1" } });

describe("the orphan poll", () => {
  it("finds the sessions with a queue or a pending turn through an index, not by reading every state", async () => {
    const pool = createPool({ url: db.url, schema: db.schema, poolSize: 1 });
    try {
      await migrate(pool, db.schema);
      await pool.query(
        `INSERT INTO session_state (session_key, state)
         SELECT 'web:idle' || g, $1 FROM generate_series(1, 20000) g`,
        [SETTLED],
      );
      await pool.query("INSERT INTO session_state (session_key, state) VALUES ('web:q', $1), ('web:p', $2)", [
        QUEUED,
        PENDING,
      ]);
      // A session with a live owner is not an orphan, whatever its state says.
      await pool.query("INSERT INTO session_state (session_key, state) VALUES ('web:owned', $1)", [QUEUED]);
      await pool.query(
        `INSERT INTO session_owners (session_key, owner, fence, lease_until)
         VALUES ('web:owned', 'p1', 1, clock_timestamp() + interval '1 minute')`,
      );
      await pool.query("ANALYZE session_state");

      const { rows } = await pool.query<{ session_key: string }>(ORPHANS);
      expect(rows.map((row) => row.session_key).sort()).toEqual(["web:p", "web:q"]);

      const plan = await pool.query<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${ORPHANS.text}`);
      const scans: string[] = [];
      const walk = (node: Record<string, unknown>) => {
        if (node["Relation Name"] === "session_state") scans.push(String(node["Node Type"]));
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk((plan.rows[0]!["QUERY PLAN"] as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
      expect(scans.length).toBeGreaterThan(0);
      expect(scans).not.toContain("Seq Scan");
    } finally {
      await pool.end();
    }
  });
});
