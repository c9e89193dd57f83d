import pg from "pg";
import { ConfigError } from "../../errors.js";

/** Default schema of the PostgreSQL adapters. */
export const DEFAULT_SCHEMA = "tiller";
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** What every PostgreSQL adapter is given: where the database is, and the schema its tables live in. */
export interface PostgresConnectionOptions {
  /** A `postgres://` connection string. */
  url: string;
  /**
   * Schema of the tables (created by the migrations when absent). Lowercase letters, digits and `_`.
   * @default "tiller"
   */
  schema?: string;
  /** Shown as `application_name` in `pg_stat_activity`. */
  applicationName?: string;
  /** Pool size. @default 10 */
  poolSize?: number;
}

/** Extra server settings for a pool's connections (`-c name=value`). */
type Settings = Record<string, string>;

/** The checked schema name (safe to write into SQL and channel names). */
export function checkSchema(schema: unknown = DEFAULT_SCHEMA): string {
  if (typeof schema !== "string" || !SCHEMA_NAME.test(schema)) {
    throw new ConfigError("schema", "a lowercase SQL name ([a-z_][a-z0-9_]*, at most 63 chars)", schema);
  }
  return schema;
}

/** Client settings: every connection resolves unqualified names in the adapter's schema. */
export function clientConfig(options: PostgresConnectionOptions, settings: Settings = {}): pg.ClientConfig {
  if (typeof options.url !== "string" || options.url.length === 0) {
    throw new ConfigError("url", "a postgres:// connection string", options.url);
  }
  const schema = checkSchema(options.schema);
  return {
    connectionString: options.url,
    options: [`-c search_path=${schema}`, ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`)].join(
      " ",
    ),
    application_name: options.applicationName ?? "tiller",
  };
}

/** A pool whose idle-client errors (a server restart, a terminated backend) do not crash the process. */
export function createPool(options: PostgresConnectionOptions, settings: Settings = {}): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(options, settings), max: options.poolSize ?? 10 });
  pool.on("error", () => {});
  // A connection lost while a client is checked out (between two statements of a transaction) must not
  // crash the process either: the statement in flight, or the next one, fails and the caller handles it.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

/** Runs `work` in one transaction on one pooled client; rolls back when it throws. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
