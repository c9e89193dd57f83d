import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";

/** A schema of its own for one suite, in the run's test database. */
export interface TestSchema {
  readonly url: string;
  readonly schema: string;
  /** A pool on the test database (the suite's own; closed after the suite). */
  readonly pool: pg.Pool;
}

/** A new schema name no other suite or run uses: lowercase, safe to put in SQL unquoted. */
export function schemaName(prefix: string): string {
  return `${prefix.replace(/[^a-z0-9_]/g, "_")}_${randomBytes(5).toString("hex")}`;
}

/**
 * Creates a fresh schema before the suite's tests and drops it (with everything in it) after them.
 * Read the fields inside tests or hooks.
 *
 * @example
 * ```ts
 * const db = usePostgresSchema("store");
 * it("…", async () => { const store = await PostgresStore.connect({ url: db.url, schema: db.schema }); });
 * ```
 */
export function usePostgresSchema(prefix: string): TestSchema {
  const url = inject("postgresUrl");
  const schema = schemaName(prefix);
  let pool: pg.Pool | undefined;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: url, max: 4 });
    pool.on("error", () => {});
    await pool.query(`CREATE SCHEMA ${schema}`);
  });
  afterAll(async () => {
    // A connection of a process the suite just killed may still hold locks for a moment: a drop that
    // deadlocks with it, or waits for it too long, is tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        await pool?.query(`SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (attempt >= 5 || (code !== "40P01" && code !== "55P03")) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
    }
    await pool?.end();
  }, 60_000);
  return {
    url,
    schema,
    get pool() {
      if (!pool) throw new Error("the test schema is ready only inside tests and hooks");
      return pool;
    },
  };
}
