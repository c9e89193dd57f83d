// One gateway-like process of a cluster test: cluster lanes (and a fenced store) on the schema it is
// given, doing what its mode says and printing one JSON line per fact. Run by cluster-processes.test.ts.
import { createInterface } from "node:readline";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { SystemClock } from "../../../src/adapters/system-clock.js";
import { createClusterLanes } from "../../../src/lanes/cluster/cluster-lanes.js";
import type { Priority } from "../../../src/policy/lane-priority.js";
import { sleep } from "../../../src/ports/clock.js";

interface Job {
  session: string;
  n: number;
  priority?: Priority;
  ms: number;
}
interface Args {
  url: string;
  schema: string;
  name: string;
  capacity: Record<string, number>;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
  jobs?: Job[];
  session?: string;
}

const [mode, json] = process.argv.slice(2);
const args = JSON.parse(json!) as Args;
const clock = new SystemClock();
const out = (fact: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...fact, name: args.name, at: Date.now() })}\n`);

const lanes = await createClusterLanes({
  url: args.url,
  schema: args.schema,
  capacity: args.capacity,
  leaseMs: args.leaseMs,
  heartbeatMs: args.heartbeatMs,
  pollMs: args.pollMs,
  processId: args.name,
  poolSize: 4,
});
out({ event: "ready" });

if (mode === "jobs") {
  // Every job is enqueued at once, in order; each reports when it ran (on the machine's one clock).
  const runs = args.jobs!.map((job) =>
    lanes.run({ session: job.session, priority: job.priority ?? "normal" }, async () => {
      const start = Date.now();
      await sleep(clock, job.ms);
      out({
        event: "ran",
        session: job.session,
        n: job.n,
        priority: job.priority ?? "normal",
        start,
        end: Date.now(),
      });
    }),
  );
  await Promise.all(runs);
  out({ event: "done" });
  await lanes.close();
  process.exit(0);
}

if (mode === "hold") {
  // Holds its session until killed, or until a line on stdin; a second task of the session waits.
  const released = new Promise((resolve) => createInterface({ input: process.stdin }).once("line", resolve));
  void lanes.run({ session: args.session! }, async (signal) => {
    out({ event: "started", session: args.session });
    await Promise.race([released, new Promise((resolve) => signal.addEventListener("abort", resolve))]);
    out({ event: "released", session: args.session });
  });
  void lanes.run({ session: args.session! }, async () => out({ event: "second" }));
}

if (mode === "write") {
  // A run that writes to its session's transcript every 50 ms and never stops by itself, whatever its
  // lease says: only fencing can keep it out.
  const store = await PostgresStore.connect({
    url: args.url,
    schema: args.schema,
    fences: lanes,
    poolSize: 2,
    applicationName: `tiller ${args.name} store`,
  });
  const session = args.session!;
  const head = await store.open(session);
  lanes
    .run({ session }, async () => {
      out({ event: "started", session });
      for (let i = 0; ; i++) {
        try {
          const [record] = await store.append(
            session,
            [{ role: "user", text: `${args.name}-${i}`, messageId: `${args.name}-${i}` }],
            head,
          );
          out({ event: "wrote", seq: record!.seq, text: `${args.name}-${i}` });
        } catch (error) {
          out({ event: "refused", code: (error as { code?: string }).code ?? String(error) });
        }
        await sleep(clock, 50);
      }
    })
    .catch((error: unknown) => out({ event: "lost", code: (error as { code?: string }).code }));
}
