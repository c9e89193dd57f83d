import { randomBytes } from "node:crypto";
import { createClusterSessions } from "../src/adapters/postgres/cluster-sessions.js";
import { PostgresStore } from "../src/adapters/postgres/postgres-store.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { createClusterLanes } from "../src/lanes/cluster/cluster-lanes.js";
import { silentLogger } from "../src/logger.js";
import type { ModelProvider } from "../src/ports/model.js";
import type { ToolDefinition } from "../src/ports/tool.js";
import { benchDatabase, type Figures, percentile, round } from "./bench-support.js";
import { claimBacklog } from "./claim-backlog.js";
import { CountingChannel, instantModel } from "./cluster-workload.js";
import { startChild } from "./start-child.js";
import { turnsPerSecond } from "./turns-per-second.js";

const CAPACITY = 8;
const CLAIMS = 200;
const LEASE_MS = 2000;
const STEERS = 60;

export async function benchPostgres(): Promise<Figures> {
  const database = await benchDatabase();
  if ("skipped" in database) {
    console.log(`postgres bench skipped: ${database.skipped}`);
    return { skipped: `skipped: ${database.skipped}` };
  }
  const { url, admin } = database;
  const schema = `bench_${randomBytes(4).toString("hex")}`;
  try {
    return {
      ...(await claimLatency(url, schema)),
      ...(await claimBacklog(url, schema, 50_000)),
      ...(await turnsPerSecond(url, schema, admin)),
      ...(await takeover(url, schema)),
      ...(await steerLatency(url, `${schema}_s`)),
      ...(await sessionTakeover(url, `${schema}_t`)),
    };
  } finally {
    for (const name of [schema, `${schema}_s`, `${schema}_t`])
      await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`).catch(() => {});
    await admin.end();
  }
}

/** Sequential runs on a lane with a free slot: the claim's own round trips, nothing waits. */
async function claimLatency(url: string, schema: string): Promise<Figures> {
  const lanes = await createClusterLanes({ url, schema, capacity: { claim: 1 } });
  const times: number[] = [];
  for (let i = 0; i < CLAIMS; i++) {
    const asked = performance.now();
    await lanes.run({ session: `claim-${i}`, lane: "claim" }, async () => {
      times.push(performance.now() - asked);
    });
  }
  await lanes.close();
  times.sort((a, b) => a - b);
  return { "claim.p50Ms": round(percentile(times, 50)), "claim.p99Ms": round(percentile(times, 99)) };
}

/** kill -9 of the process holding a session; another process waits for it: how long until it runs. */
async function takeover(url: string, schema: string): Promise<Figures> {
  const holder = startChild("hold", {
    url,
    schema,
    name: "holder",
    capacity: { main: CAPACITY },
    session: "web:held",
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  await holder.fact("started");
  const heir = await createClusterLanes({ url, schema, leaseMs: LEASE_MS, pollMs: 100 });
  let startedAt = 0;
  const taken = heir.run({ session: "web:held" }, async () => {
    startedAt = Date.now();
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const killedAt = Date.now();
  holder.child.kill("SIGKILL");
  await taken;
  await heir.close();
  return { "takeover.ms": startedAt - killedAt, "takeover.leaseMs": LEASE_MS };
}

/** A gateway of the cluster in this process: lanes, store, session ownership (its own name). */
async function member(
  url: string,
  schema: string,
  name: string,
  model: ModelProvider,
  tools: ToolDefinition[],
) {
  const lanes = await createClusterLanes({
    url,
    schema,
    processId: name,
    capacity: { main: CAPACITY },
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  const store = await PostgresStore.connect({ url, schema, fences: lanes });
  const cluster = await createClusterSessions({
    url,
    schema,
    processId: name,
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  const gateway = createGateway({
    model,
    tools,
    channels: { web: new CountingChannel() },
    store,
    lanes,
    cluster,
    logger: silentLogger,
  });
  await gateway.start();
  return {
    gateway,
    async close() {
      await gateway.stop();
      await cluster.close();
      await lanes.close();
    },
  };
}

/**
 * Two gateways on one database; a turn runs on B, waiting in a tool. A steer is sent to A: the time
 * from A's `receive()` until B's session has applied it to the running turn (B's own ack of it), the
 * forward through the inbox row and the NOTIFY included.
 */
async function steerLatency(url: string, schema: string): Promise<Figures> {
  const gates = new Map<string, () => void>();
  const hold: ToolDefinition = {
    name: "hold",
    description: "waits until the bench lets it go",
    cancellable: true,
    async execute(_args, context) {
      await new Promise<void>((resolve) => gates.set(context.session, resolve));
      return "held";
    },
  };
  const model: ModelProvider = {
    async complete(request) {
      const turn = request.context.slice(request.turnStart);
      if (!turn.some((message) => message.role === "toolResult"))
        return { text: "", toolCalls: [{ callId: `${request.runId}-c`, name: "hold", args: {} }] };
      return { text: "done", toolCalls: [] };
    },
  };
  const a = await member(url, schema, "steer-a", model, [hold]);
  const b = await member(url, schema, "steer-b", model, [hold]);
  const times: number[] = [];
  for (let i = 0; i < STEERS; i++) {
    const session = `web:steer-${i}`;
    const holding = new Promise<void>((resolve) => {
      const off = b.gateway.subscribe((event) => {
        if (event.type === "tool.started" && event.session === session) {
          off();
          resolve();
        }
      });
    });
    await b.gateway.receive({ session, channel: "web", text: "start", id: "m1" });
    await holding;
    let sent = 0;
    const applied = new Promise<number>((resolve) => {
      const off = b.gateway.subscribe((event) => {
        if (event.type === "message.acked" && event.session === session && event.messageId === "m2") {
          off();
          resolve(performance.now() - sent);
        }
      });
    });
    sent = performance.now();
    const ack = await a.gateway.receive({ session, channel: "web", text: "steer this", id: "m2" });
    if (ack.disposition !== "steered") throw new Error(`steer bench: the steer was ${ack.disposition}`);
    times.push(await applied);
    gates.get(session)?.();
  }
  await a.close();
  await b.close();
  times.sort((x, y) => x - y);
  return { "steer.p50Ms": round(percentile(times, 50)), "steer.p99Ms": round(percentile(times, 99)) };
}

/**
 * kill -9 of the process that owns a session mid-turn (stuck in a model call): how long until another
 * process has taken the session over and its cut-off turn has started again there.
 */
async function sessionTakeover(url: string, schema: string): Promise<Figures> {
  const owner = startChild("own", {
    url,
    schema,
    name: "owner",
    capacity: { main: CAPACITY },
    session: "web:owned",
    leaseMs: LEASE_MS,
    pollMs: 100,
  });
  await owner.fact("started");
  let adoptedAt = 0;
  let resumedAt = 0;
  const answered = instantModel();
  const heir = await member(url, schema, "heir", answered, []);
  const resumed = new Promise<void>((resolve) =>
    heir.gateway.subscribe((event) => {
      if (event.type === "session.adopted" && event.session === "web:owned") adoptedAt = Date.now();
      if (event.type === "turn.started" && event.session === "web:owned") {
        resumedAt = Date.now();
        resolve();
      }
    }),
  );
  const killedAt = Date.now();
  owner.child.kill("SIGKILL");
  await resumed;
  await heir.close();
  return {
    "sessionTakeover.adoptedMs": adoptedAt - killedAt,
    "sessionTakeover.resumedMs": resumedAt - killedAt,
    "sessionTakeover.leaseMs": LEASE_MS,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchPostgres());
  process.exit(0);
}
