import { describe, expect, it } from "vitest";
import { createPool } from "../../../src/adapters/postgres/connection.js";
import { migrate } from "../../../src/adapters/postgres/migrate.js";
import { MIGRATIONS } from "../../../src/adapters/postgres/migrations.js";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { schemaName, usePostgresSchema } from "../../support/postgres.js";
import { answers, startPrivateServer } from "../../support/postgres-server.js";

const db = usePostgresSchema("migrate");

describe("PostgreSQL migrations", () => {
  it("applies every migration once when several processes start at the same moment", async () => {
    const schema = schemaName(`${db.schema}_c`);
    const pools = Array.from({ length: 4 }, () => createPool({ url: db.url, schema, poolSize: 1 }));
    try {
      const results = await Promise.all(pools.map((pool) => migrate(pool, schema)));
      const applied = results.flatMap((r) => r.applied).sort();
      expect(applied).toEqual(MIGRATIONS.map((m) => m.version).sort());
      expect(results.map((r) => r.version)).toEqual(
        results.map(() => Math.max(...MIGRATIONS.map((m) => m.version))),
      );
      const { rows } = await db.pool.query(
        `SELECT version FROM ${schema}.tiller_migrations ORDER BY version`,
      );
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      // A store started afterwards finds the schema current and works on it.
      const store = await PostgresStore.connect({ url: db.url, schema, poolSize: 1 });
      expect(await store.open("A")).toMatchObject({ revision: 1, lastSeq: 0 });
      await store.close();
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      await db.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });

  it("applies only what is missing, and refuses a schema newer than the code", async () => {
    const schema = schemaName(`${db.schema}_n`);
    const pool = createPool({ url: db.url, schema, poolSize: 1 });
    try {
      expect((await migrate(pool, schema, MIGRATIONS.slice(0, 1))).applied).toEqual([1]);
      const rest = MIGRATIONS.slice(1).map((m) => m.version);
      expect((await migrate(pool, schema)).applied).toEqual(rest);
      expect((await migrate(pool, schema)).applied).toEqual([]);
      await expect(migrate(pool, schema, MIGRATIONS.slice(0, 2))).rejects.toThrow(
        new RegExp(`at migration ${rest.at(-1)}`),
      );
    } finally {
      await pool.end();
      await db.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });

  it("test setup: starts a private server on a free port when none is given", async () => {
    const server = await startPrivateServer();
    try {
      expect(server.source).toBe("private");
      expect(await answers(server.url)).toBe(true);
    } finally {
      await server.stop();
    }
    expect(await answers(server.url)).toBe(false);
  }, 60_000);
});
