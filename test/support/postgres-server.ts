import { execFile } from "node:child_process";
import { chown, mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const run = promisify(execFile);
/** The server this project's machines run before tests start. */
export const LOCAL_URL = "postgres://postgres@127.0.0.1:5432/test";

/** A database the tests may use, and how to let it go. */
export interface TestDatabase {
  url: string;
  /** Where it came from, for the test log. */
  source: "env" | "local" | "private";
  stop(): Promise<void>;
}

/** Whether a server answers a query at `url` within a second. */
export async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The database for the test run: `TILLER_TEST_DATABASE_URL` when set, else the machine's server at
 * 127.0.0.1:5432/test when it answers, else a private server started from the PostgreSQL binaries under
 * /usr/lib/postgresql (Debian's packages) in a temporary directory on a free port, stopped by `stop()`.
 */
export async function resolveTestDatabase(): Promise<TestDatabase> {
  const fromEnv = process.env.TILLER_TEST_DATABASE_URL;
  if (fromEnv) return { url: fromEnv, source: "env", stop: async () => {} };
  if (await answers(LOCAL_URL)) return { url: LOCAL_URL, source: "local", stop: async () => {} };
  return startPrivateServer();
}

/** A private server a fault test may stop and start again (on the same port, with its data). */
export interface PrivateServer extends TestDatabase {
  /** `pg_ctl stop -m immediate`: every connection is cut at once, as in a crash or failover. */
  halt(): Promise<void>;
  /** Starts the halted server again (crash recovery, the same port and data). */
  restart(): Promise<void>;
}

export async function startPrivateServer(settings: Record<string, string> = {}): Promise<PrivateServer> {
  const bin = await newestBinDir();
  if (!bin) {
    throw new Error(
      "no PostgreSQL for the tests: set TILLER_TEST_DATABASE_URL, run a server at 127.0.0.1:5432 " +
        "(database test, trust auth), or install Debian's postgresql package so a private one can start",
    );
  }
  const dir = await mkdtemp(join(tmpdir(), "tiller-pg-"));
  // initdb refuses to run as root: the cluster then belongs to the postgres system user.
  const asRoot = process.getuid?.() === 0;
  const exec = async (file: string, args: string[]) => {
    if (!asRoot) return run(join(bin, file), args);
    return run("runuser", ["-u", "postgres", "--", join(bin, file), ...args]);
  };
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, "data");
  const port = await freePort();
  await exec("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const extra = Object.entries(settings).map(([name, value]) => ` -c ${name}=${value}`);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off${extra.join("")}`;
  const start = () =>
    exec("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-o", options, "start"]);
  await start();
  return {
    async halt() {
      await exec("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    },
    async restart() {
      await start();
    },
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    source: "private",
    async stop() {
      await exec("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function newestBinDir(): Promise<string | undefined> {
  const root = "/usr/lib/postgresql";
  const versions = await readdir(root).catch(() => [] as string[]);
  const sorted = versions.filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  return sorted[0] === undefined ? undefined : join(root, sorted[0], "bin");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
