/**
 * One gateway process of a cluster on PostgreSQL (the PostgreSQL bench and the cluster gateway test
 * start several): `node postgres-child.js MODE JSON` (or `--import tsx postgres-child.ts`). Prints one
 * JSON line per fact.
 *
 * - `gateway`: a real gateway on PostgresStore + cluster lanes plays its warm-up, if any, then its
 *   workload (cluster-workload.ts) when it reads a line on stdin (so every process starts at once), prints `done` with its wall time
 *   once every reply was sent, then stops the gateway and prints `stopped`.
 * - `hold`: holds one session's lane slot until killed (the takeover bench kills it with SIGKILL).
 * - `own`: a gateway that owns one session, its turn stuck in a model call, until killed (the session
 *   takeover bench kills it with SIGKILL).
 *
 * The gateways run with the cluster's session ownership and inbox, as `tiller serve --postgres` does.
 */
import { createInterface } from "node:readline";
import { createClusterSessions } from "../src/adapters/postgres/cluster-sessions.js";
import { PostgresStore } from "../src/adapters/postgres/postgres-store.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { createClusterLanes } from "../src/lanes/cluster/cluster-lanes.js";
import { silentLogger } from "../src/logger.js";
import { CountingChannel, instantModel, playWorkload, SlotTimer, type Workload } from "./cluster-workload.js";
import { SqlCounter } from "./sql-counter.js";
import { WakeCounter } from "./wake-counter.js";

interface Args {
  url: string;
  schema: string;
  name: string;
  capacity: Record<string, number>;
  leaseMs?: number;
  pollMs?: number;
  workload?: Workload;
  /** Counts the statements and commits of the measured workload (reported with `done`). */
  countSql?: boolean;
  /** Played before `ready` (JIT, connections, prepared plans), on sessions of its own. */
  warmup?: Workload;
  session?: string;
}

const [mode, json] = process.argv.slice(2);
const args = JSON.parse(json!) as Args;
const out = (fact: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...fact, name: args.name, at: Date.now() })}\n`);

const counter = args.countSql ? new SqlCounter() : undefined;
const wakes = args.countSql ? new WakeCounter() : undefined;

const lanes = await createClusterLanes({
  url: args.url,
  schema: args.schema,
  capacity: args.capacity,
  processId: args.name,
  poolSize: 6,
  ...(args.leaseMs ? { leaseMs: args.leaseMs } : {}),
  ...(args.pollMs ? { pollMs: args.pollMs } : {}),
});

if (mode === "hold") {
  void lanes.run({ session: args.session! }, async (signal) => {
    out({ event: "started", session: args.session });
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
  });
}

async function clusterGateway(model: ReturnType<typeof instantModel>, channel: CountingChannel) {
  const store = await PostgresStore.connect({
    url: args.url,
    schema: args.schema,
    fences: lanes,
    poolSize: 6,
    applicationName: `tiller ${args.name} store`,
  });
  const cluster = await createClusterSessions({
    url: args.url,
    schema: args.schema,
    processId: args.name,
    poolSize: 4,
    ...(args.leaseMs ? { leaseMs: args.leaseMs } : {}),
    ...(args.pollMs ? { pollMs: args.pollMs } : {}),
  });
  const gateway = createGateway({
    config: { queue: { mode: "followup" }, lanes: args.capacity },
    model,
    channels: { web: channel },
    store,
    lanes,
    cluster,
    logger: silentLogger,
  });
  return { store, cluster, gateway };
}

if (mode === "own") {
  const stuck = { complete: () => new Promise<never>(() => {}) };
  const { gateway } = await clusterGateway(stuck, new CountingChannel());
  await gateway.start();
  gateway.subscribe((event) => {
    if (event.type === "turn.started") out({ event: "started", session: args.session });
  });
  await gateway.receive({ session: args.session!, channel: "web", text: "hold on", id: "held-1" });
}

if (mode === "gateway") {
  const channel = new CountingChannel();
  const { store, cluster, gateway } = await clusterGateway(
    instantModel(args.workload!.modelMs ?? 0),
    channel,
  );
  const append = store.append.bind(store);
  store.append = (session, records, expect) =>
    append(session, records, expect).catch((error: unknown) => {
      out({ event: "failure", type: "append", detail: String(error) });
      throw error;
    });
  // Failures a run meets (a refused write, a failed save) are facts too: a test shows them when it fails.
  gateway.subscribe((event) => {
    if (/failed|undelivered|lease/i.test(event.type))
      out({ event: "failure", type: event.type, detail: String("error" in event ? event.error : "") });
  });
  await gateway.start();
  if (args.warmup) await playWorkload(gateway, channel, args.warmup);
  out({ event: "ready" });
  await new Promise<void>((resolve) =>
    createInterface({ input: process.stdin }).once("line", () => resolve()),
  );
  const slots = new SlotTimer(gateway);
  const cpu = process.cpuUsage();
  counter?.start();
  slots.start();
  wakes?.start();
  const ms = await playWorkload(gateway, channel, args.workload!);
  const used = process.cpuUsage(cpu);
  const sql = counter?.stop();
  const held = slots.stop();
  const woken = wakes?.stop();
  out({
    event: "done",
    ms,
    replies: channel.replies.length,
    cpuMs: (used.user + used.system) / 1000,
    slotMs: held.heldMs,
    slotRuns: held.runs,
    ...woken,
    ...(sql
      ? {
          statements: sql.statements,
          commits: sql.commits,
          durableCommits: sql.durableCommits,
          byText: Object.fromEntries(sql.byText),
        }
      : {}),
  });
  // A final is stored after its delivery: stop() waits for every turn's last write (the lane slot is
  // held until the final is stored), and `stopped` says it is all in the database.
  await gateway.stop();
  await cluster.close();
  await lanes.close();
  out({ event: "stopped" });
  process.exit(0);
}
