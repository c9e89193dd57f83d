import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TestSchema } from "./postgres.js";
import { type Running, startServe, type useServeProcesses } from "./serve-process.js";
import { SseRecorder } from "./sse-recorder.js";

/** One real `tiller serve --postgres` process of a test cluster. */
export interface ClusterMember extends Running {
  name: string;
  url: string;
  /** Its process id in the cluster (from the banner). */
  processId: string;
}

/**
 * Starts `names.length` real `tiller serve --postgres` processes on the suite's schema, with the
 * config and environment given (the demo model unless the args say otherwise).
 */
export async function startCluster(
  procs: ReturnType<typeof useServeProcesses>,
  db: TestSchema,
  names: string[],
  options: { config?: unknown; args?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<ClusterMember[]> {
  const config = join(procs.dir, `config-${names.join("")}.json`);
  await writeFile(config, JSON.stringify(options.config ?? {}));
  return Promise.all(
    names.map(async (name) => {
      const args = ["--store", join(procs.dir, name), "--config", config, "--postgres", db.url];
      const running = await startServe(
        procs.command,
        [...args, "--schema", db.schema, ...(options.args ?? [])],
        options.env ?? {},
      );
      procs.live.add(running);
      const processId = running.stdout().match(/process (\S+)/)?.[1];
      if (!processId) throw new Error(`no process id in the banner:\n${running.stdout()}`);
      return { ...running, name, processId };
    }),
  );
}

export interface PostedAck {
  disposition: string;
  mode: string;
  text: string;
  owner?: string;
  waitsFor?: string;
  runId?: string;
}

/** POSTs one message to a process; resolves with its ack. */
export async function post(
  member: ClusterMember,
  session: string,
  text: string,
  id: string,
  mode?: string,
): Promise<PostedAck> {
  const response = await fetch(`${member.url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text, id, ...(mode ? { mode } : {}) }),
  });
  const body = (await response.json()) as { ack?: PostedAck };
  if (response.status !== 200 || !body.ack)
    throw new Error(`POST to ${member.name}: ${response.status} ${JSON.stringify(body)}`);
  return body.ack;
}

/** `GET /v1/sessions/{key}` on one process. */
export async function sessionDetail(member: ClusterMember, session: string) {
  const response = await fetch(`${member.url}/v1/sessions/${encodeURIComponent(session)}`);
  return (await response.json()) as {
    state: string;
    run: { runId: string; state: string; currentTool?: string; process?: string; lane?: string } | null;
    owner?: string | null;
    lane?: { active: number; queued: number; capacity: number } | null;
    queue?: Array<{ kind: string; messageIds: string[] }>;
  };
}

/** Follows a session's deliveries on one process (closed by the suite after each test). */
export function follow(
  procs: ReturnType<typeof useServeProcesses>,
  member: ClusterMember,
  session: string,
): SseRecorder {
  return procs.record(new SseRecorder(`${member.url}/v1/sessions/${encodeURIComponent(session)}/deliveries`));
}

/** Polls `check` until it returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until `member` runs the demo model's slow tool in `session`'s turn. */
export async function toolRunning(member: ClusterMember, session: string): Promise<void> {
  await eventually(`${session} running its tool on ${member.name}`, async () => {
    return (await sessionDetail(member, session)).run?.currentTool === "demo_task";
  });
}

/** The owner of a session in `session_owners` (undefined: nobody). */
export async function ownerOf(db: TestSchema, session: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ owner: string }>(
    `SELECT owner FROM ${db.schema}.session_owners WHERE session_key = $1`,
    [session],
  );
  return rows[0]?.owner;
}

/** POSTs one follow-up and returns the answer as it came (status, Retry-After, JSON body): for refusals. */
export async function postRaw(member: ClusterMember, session: string, text: string, id: string) {
  const response = await fetch(`${member.url}/v1/sessions/${encodeURIComponent(session)}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text, id, mode: "followup" }),
  });
  const body = (await response.json()) as { ack?: { disposition: string }; error?: { code: string } };
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body };
}

/** Every web delivery of the schema (replies, recoveries, notices) in order, waiting while the database is away. */
export async function webDeliveries(db: Pick<TestSchema, "pool" | "schema">) {
  for (;;) {
    try {
      const { rows } = await db.pool.query<{ session_key: string; kind: string; text: string }>(
        `SELECT session_key, kind, text FROM ${db.schema}.web_deliveries ORDER BY session_key, seq`,
      );
      return rows;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
