/**
 * What one turn costs the database on a `tiller serve --postgres` process: statements, round trips and
 * commits (and of those, the ones that wait for the disk), counted on the wire by wrapping the `pg`
 * client, for the first message of a new session and for a follow-up in a session that has one. The
 * background loops (renewals, polls) run too rarely here to land inside a turn. Prints per-statement
 * counts with `--detail`. Run alone with `npx tsx bench/turn-cost.ts`.
 */
import { randomBytes } from "node:crypto";
import { WebChannel } from "../src/adapters/channels/web-channel.js";
import { createClusterSessions } from "../src/adapters/postgres/cluster-sessions.js";
import { PostgresDeliveryLog } from "../src/adapters/postgres/postgres-delivery-log.js";
import { PostgresStore } from "../src/adapters/postgres/postgres-store.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { createClusterLanes } from "../src/lanes/cluster/cluster-lanes.js";
import { silentLogger } from "../src/logger.js";
import { benchDatabase, type Figures, round } from "./bench-support.js";
import { instantModel } from "./cluster-workload.js";
import { SqlCounter } from "./sql-counter.js";

const TURNS = Number(process.env.TILLER_TURNS ?? 20);
const QUIET_MS = 150;

async function quiet(counter: SqlCounter): Promise<void> {
  while (performance.now() - counter.lastStatementAt < QUIET_MS)
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS / 3));
}

export async function benchTurnCost(detail = false): Promise<Figures> {
  const database = await benchDatabase();
  if ("skipped" in database) return { skipped: `skipped: ${database.skipped}` };
  const { url, admin } = database;
  const schema = `bench_${randomBytes(4).toString("hex")}`;
  const counter = new SqlCounter(process.env.TILLER_TRACE_SQL === "1");
  // Long leases and polls: the loops stay out of the counted turns.
  const slow = { leaseMs: 600_000, pollMs: 600_000 };
  const lanes = await createClusterLanes({ url, schema, processId: "cost", capacity: { main: 8 }, ...slow });
  const cluster = await createClusterSessions({ url, schema, processId: "cost", ...slow });
  const store = await PostgresStore.connect({
    url,
    schema,
    processId: "cost",
    fences: {
      fenceFor: (session) => lanes.fenceFor(session),
      using: (session, write) => lanes.using?.(session, write),
      ownerFenceFor: (session) => cluster.ownershipFence(session),
    },
  });
  const deliveries = await PostgresDeliveryLog.connect({ url, schema, pollMs: 600_000 });
  const web = new WebChannel(deliveries);
  const gateway = createGateway({
    config: { queue: { mode: "followup" } },
    model: instantModel(),
    channels: { web },
    store,
    lanes,
    cluster,
    logger: silentLogger,
  });
  await gateway.start();
  const figures: Figures = {};
  const details: string[] = [];
  try {
    const one = async (session: string, id: string) => {
      await gateway.receive({ session, channel: "web", text: "question", id });
      await quiet(counter);
    };
    await one("web:warm", "w1"); // connections, prepared plans, JIT
    for (const [name, follow] of [
      ["first", false],
      ["followup", true],
    ] as const) {
      counter.start();
      for (let i = 0; i < TURNS; i++) {
        const session = follow ? "web:warm" : `web:${name}-${i}`;
        await one(session, `${name}-${i}`);
      }
      const tally = counter.stop();
      figures[`turn.${name}.statements`] = round(tally.statements / TURNS, 1);
      figures[`turn.${name}.commits`] = round(tally.commits / TURNS, 1);
      figures[`turn.${name}.durableCommits`] = round(tally.durableCommits / TURNS, 1);
      if (detail)
        for (const [text, n] of [...tally.byText].sort((a, b) => b[1] - a[1]))
          details.push(`${name}\t${round(n / TURNS, 2)}\t${text}`);
    }
  } finally {
    await gateway.stop(); // closes the store
    await cluster.close();
    await lanes.close();
    await deliveries.close().catch(() => {});
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
    counter.uninstall();
  }
  if (detail) console.log(details.join("\n"));
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchTurnCost(process.argv.includes("--detail")));
  process.exit(0);
}
