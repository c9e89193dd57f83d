/**
 * One gateway process of a cluster on PostgreSQL (the PostgreSQL bench and the cluster gateway test
 * start several): `node postgres-child.js MODE JSON` (or `--import tsx postgres-child.ts`). Prints one
 * JSON line per fact.
 *
 * - `gateway`: a real gateway on PostgresStore + cluster lanes plays its workload (cluster-workload.ts)
 *   when it reads a line on stdin (so every process starts at once), prints `done` with its wall time.
 * - `hold`: holds one session's lane slot until killed (the takeover bench kills it with SIGKILL).
 */
import { createInterface } from "node:readline";
import { createClusterLanes } from "../src/adapters/postgres/cluster-lanes.js";
import { PostgresStore } from "../src/adapters/postgres/postgres-store.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { silentLogger } from "../src/logger.js";
import { CountingChannel, instantModel, playWorkload, type Workload } from "./cluster-workload.js";

interface Args {
  url: string;
  schema: string;
  name: string;
  capacity: Record<string, number>;
  leaseMs?: number;
  pollMs?: number;
  workload?: Workload;
  session?: string;
}

const [mode, json] = process.argv.slice(2);
const args = JSON.parse(json!) as Args;
const out = (fact: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...fact, name: args.name, at: Date.now() })}\n`);

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

if (mode === "gateway") {
  const store = await PostgresStore.connect({
    url: args.url,
    schema: args.schema,
    fences: lanes,
    poolSize: 6,
  });
  const append = store.append.bind(store);
  store.append = (session, records, expect) =>
    append(session, records, expect).catch((error: unknown) => {
      out({ event: "failure", type: "append", detail: String(error) });
      throw error;
    });
  const channel = new CountingChannel();
  const gateway = createGateway({
    config: { queue: { mode: "followup" }, lanes: args.capacity },
    model: instantModel(args.workload!.modelMs ?? 0),
    channels: { web: channel },
    store,
    lanes,
    logger: silentLogger,
  });
  // Failures a run meets (a refused write, a failed save) are facts too: a test shows them when it fails.
  gateway.subscribe((event) => {
    if (/failed|undelivered|lease/i.test(event.type))
      out({ event: "failure", type: event.type, detail: String(event.error ?? "") });
  });
  await gateway.start();
  out({ event: "ready" });
  await new Promise<void>((resolve) =>
    createInterface({ input: process.stdin }).once("line", () => resolve()),
  );
  const ms = await playWorkload(gateway, channel, args.workload!);
  out({ event: "done", ms, replies: channel.replies.length });
  // A final is stored after its delivery: wait until every session is idle and nothing is being
  // written before stopping.
  const idle = () =>
    !gateway.isBusy && args.workload!.sessions.every((s) => gateway.inspectSession(s)?.state === "idle");
  while (!idle()) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 200));
  await gateway.stop();
  await lanes.close();
  process.exit(0);
}
