import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { type PrivateServer, startPrivateServer } from "./postgres-server.js";

/**
 * A private server for one suite (never the machine's shared one, which must not be stopped), with
 * the server settings given: started before the suite, stopped after it. Read fields inside tests.
 */
export function usePrivatePostgres(settings: Record<string, string> = {}) {
  let server: PrivateServer | undefined;
  let pool: pg.Pool | undefined;
  beforeAll(async () => {
    server = await startPrivateServer(settings);
    pool = new pg.Pool({ connectionString: server.url, max: 2 });
    pool.on("error", () => {});
  }, 60_000);
  afterAll(async () => {
    await pool?.end().catch(() => {});
    await server?.stop();
  }, 60_000);
  const ready = () => {
    if (!server || !pool) throw new Error("the private server is ready only inside tests and hooks");
    return { server, pool };
  };
  return {
    get url() {
      return ready().server.url;
    },
    schema: "tiller",
    get pool() {
      return ready().pool;
    },
    get server() {
      return ready().server;
    },
  };
}
