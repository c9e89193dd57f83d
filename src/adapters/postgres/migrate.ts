import type pg from "pg";
import { TillerError } from "../../errors.js";
import { checkSchema, inTransaction } from "./connection.js";
import { MIGRATIONS, type Migration } from "./migrations.js";

/** What `migrate` did. */
export interface MigrationResult {
  /** Versions applied by this call, in order (empty when the schema was current). */
  applied: number[];
  /** The schema's version afterwards. */
  version: number;
}

/**
 * Brings the schema up to date: creates it when absent, then applies each migration not yet recorded
 * in `tiller_migrations`, all in one transaction under an advisory lock, so processes starting at once
 * apply each migration exactly once and none starts on a half-built schema. Refuses a database whose
 * schema is newer than this code.
 *
 * @example
 * ```ts
 * const { applied } = await migrate(pool, "tiller"); // [1, 2, 3] on an empty database, [] after
 * ```
 */
export async function migrate(
  pool: pg.Pool,
  schemaName: string,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationResult> {
  const schema = checkSchema(schemaName);
  return inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`tiller.migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`SET LOCAL search_path = ${schema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS tiller_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>("SELECT version FROM tiller_migrations");
    const done = new Set(rows.map((row) => row.version));
    const known = Math.max(0, ...migrations.map((m) => m.version));
    const newest = Math.max(0, ...done);
    if (newest > known) {
      throw new TillerError(
        "STORE_FAILED",
        `schema "${schema}" is at migration ${newest}; this version of Tiller knows migrations up to ${known}`,
      );
    }
    const applied: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query("INSERT INTO tiller_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    return { applied, version: Math.max(newest, ...applied) };
  });
}
