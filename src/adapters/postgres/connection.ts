import pg from "pg";
import { ConfigError } from "../../errors.js";
// The options live apart so that the public declarations of the adapters never import pg's types.
import type { PostgresConnectionOptions } from "./connection-options.js";

/** Default schema of the PostgreSQL adapters. */
export const DEFAULT_SCHEMA = "tiller";
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Extra server settings for a pool's connections (`-c name=value`). */
type Settings = Record<string, string>;

/** The checked schema name (safe to write into SQL and channel names). */
export function checkSchema(schema: unknown = DEFAULT_SCHEMA): string {
  if (typeof schema !== "string" || !SCHEMA_NAME.test(schema)) {
    throw new ConfigError("schema", "a lowercase SQL name ([a-z_][a-z0-9_]*, at most 63 chars)", schema);
  }
  return schema;
}

/** A statement prepared once per connection under its name (`pool.query({ ...named, values })`). */
export interface Named {
  name: string;
  text: string;
}

/**
 * The settings of the pools whose hot statements are named (prepared once per connection): their
 * plans, and those of the statement functions (migration 12), are made once per connection and kept.
 * PostgreSQL's default would plan them again on every call whenever an array parameter makes a custom
 * plan look cheaper (the batched saves and appends, by `unnest`), which cost more than running them.
 * Statements whose plan depends on a value (a range over a large table) send it as a literal.
 */
export const GENERIC_PLANS: Settings = { plan_cache_mode: "force_generic_plan" };

/**
 * Client settings: every connection resolves unqualified names in the adapter's schema. Server
 * settings given in the URL (`?options=-c name=value`) are kept, before the adapter's own.
 */
export function clientConfig(options: PostgresConnectionOptions, settings: Settings = {}): pg.ClientConfig {
  if (typeof options.url !== "string" || options.url.length === 0) {
    throw new ConfigError("url", "a postgres:// connection string", options.url);
  }
  const schema = checkSchema(options.schema);
  const { url, given } = withoutOptions(options.url);
  return {
    connectionString: url,
    options: [
      ...given,
      `-c search_path=${schema}`,
      ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
    ].join(" "),
    application_name: options.applicationName ?? "tiller",
  };
}

/**
 * The URL without its `options` parameter, and that parameter: the driver would let it replace the
 * adapter's options (its search_path with them) rather than add to them.
 */
function withoutOptions(url: string): { url: string; given: string[] } {
  const query = url.indexOf("?");
  if (query < 0) return { url, given: [] };
  const params = new URLSearchParams(url.slice(query + 1));
  const given = params.get("options");
  if (given === null) return { url, given: [] };
  params.delete("options");
  const rest = params.toString();
  return { url: url.slice(0, query) + (rest ? `?${rest}` : ""), given: [given] };
}

/**
 * Server answers to a new connection that mean "not now" rather than "no": too many clients (53300),
 * the server starting up or shutting down (57P03), too many connections for the role (53300 too).
 */
const BUSY_AT_CONNECT = new Set(["53300", "57P03"]);

/** True when a connection attempt failed because the server is busy: trying again later may work. */
export function isBusyAtConnect(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && BUSY_AT_CONNECT.has(code);
}

/**
 * A pool whose idle-client errors (a server restart, a terminated backend) do not crash the process,
 * and whose new connections refused by a busy server are tried again (`connectRetryMs`). `idleMs`:
 * how long an idle connection is kept (0: until the pool ends; default 10 s).
 */
export function createPool(
  options: PostgresConnectionOptions,
  settings: Settings = {},
  idleMs = 10_000,
): pg.Pool {
  const pool = new pg.Pool({
    ...clientConfig(options, settings),
    max: options.poolSize ?? 10,
    idleTimeoutMillis: idleMs,
  });
  retryBusyConnects(pool, options.connectRetryMs ?? 5000);
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

type ConnectCallback = (
  error: Error | undefined,
  client?: pg.PoolClient,
  done?: (release?: unknown) => void,
) => void;

/**
 * Wraps `pool.connect` (which `pool.query` uses too) so that a connection the server refused for being
 * busy is asked for again with backoff, up to `budgetMs`: a full `max_connections` is a moment of
 * load, not a failed write. Other errors (the server down, a bad password) fail at once.
 */
function retryBusyConnects(pool: pg.Pool, budgetMs: number): void {
  const connect = pool.connect.bind(pool) as (callback: ConnectCallback) => void;
  const attempt = (started: number, delayMs: number, callback: ConnectCallback) => {
    connect((error, client, done) => {
      if (error && isBusyAtConnect(error) && Date.now() - started + delayMs <= budgetMs && !pool.ending) {
        setTimeout(() => attempt(started, Math.min(delayMs * 2, 500), callback), delayMs);
        return;
      }
      callback(error, client, done);
    });
  };
  const patched = (callback?: ConnectCallback) => {
    if (callback) {
      attempt(Date.now(), 20, callback);
      return undefined;
    }
    return new Promise<pg.PoolClient>((resolve, reject) =>
      attempt(Date.now(), 20, (error, client) => (error || !client ? reject(error) : resolve(client))),
    );
  };
  (pool as unknown as { connect: typeof patched }).connect = patched;
}
