import { describe, expect, it } from "vitest";
import { usePostgresSchema } from "../../support/postgres.js";
import {
  type ClusterMember,
  eventually,
  follow,
  ownerOf,
  post,
  startCluster,
  toolRunning,
} from "../../support/serve-cluster.js";
import { useServeProcesses } from "../../support/serve-process.js";
import { SseRecorder } from "../../support/sse-recorder.js";

// Three real `tiller serve --postgres` processes on one schema: a client following a session's
// deliveries on any process sees every reply of the session, wherever its turn ran, exactly once.

const db = usePostgresSchema("deliveries_cluster");
const procs = useServeProcesses("tiller-deliveries-pg");

let cluster: ClusterMember[] = [];
const SESSION = "web:far";

/** The session's deliveries as stored, in seq order. */
async function stored(): Promise<{ message_id: string; kind: string; text: string }[]> {
  const { rows } = await db.pool.query<{ message_id: string; kind: string; text: string }>(
    `SELECT message_id, kind, text FROM ${db.schema}.web_deliveries WHERE session_key = $1 ORDER BY seq`,
    [SESSION],
  );
  return rows;
}

const ids = (recorder: SseRecorder) => recorder.of("delivery").map((event) => event.id);

describe("cluster deliveries: one stream of a session's replies on every process", () => {
  it("starts three processes", async () => {
    cluster = await startCluster(procs, db, ["a", "b", "c"], {
      config: { lanes: { main: 3 } },
      // Long enough for the steer to reach the running tool on a loaded machine.
      env: { TILLER_DEMO_TASK_MS: "6000" },
    });
    expect(new Set(cluster.map((m) => m.processId)).size).toBe(3);
  }, 60_000);

  it("a client on A receives, once, the reply of a turn that ran on B", async () => {
    const [a, b] = cluster as [ClusterMember, ClusterMember];
    const onA = follow(procs, a, SESSION);
    await onA.opened;
    expect((await post(b, SESSION, "please run a task", "f1")).disposition).toBe("started");
    await toolRunning(b, SESSION);
    expect(await ownerOf(db, SESSION)).toBe(b.processId);
    // Sent to A, steered into B's run: the reply is B's, and A's client sees it.
    expect((await post(a, SESSION, "also mention pineapples", "f2")).disposition).toBe("steered");
    const reply = await onA.waitFor((e) => e.event === "delivery" && e.data.kind === "reply", 60_000);
    expect(String(reply.data.text)).toContain("pineapples");
    await eventually("B to give the session up", async () => (await ownerOf(db, SESSION)) === undefined);

    const rows = await stored();
    expect(rows.filter((row) => row.kind === "reply")).toHaveLength(1);
    await eventually("A's stream to hold every stored delivery", () => ids(onA).length >= rows.length);
    // Exactly once each, in the stored order, with the stored ids as SSE ids.
    expect(ids(onA)).toEqual(rows.map((row) => row.message_id));
    expect(reply.id).toBe(rows.find((row) => row.kind === "reply")!.message_id);
  }, 120_000);

  it("a client reconnecting to C with Last-Event-ID receives only what came after, then live ones", async () => {
    const [a, b, c] = cluster as [ClusterMember, ClusterMember, ClusterMember];
    const onA = follow(procs, a, SESSION);
    const before = await stored();
    await eventually("A's replay", () => ids(onA).length >= before.length);
    const last = before.at(-1)!.message_id;

    // A turn on B that C never saw live.
    expect((await post(b, SESSION, "hello again", "f3")).disposition).toBe("started");
    await eventually("the second reply stored", async () => {
      const rows = await stored();
      return rows.filter((row) => row.kind === "reply").length === 2 ? rows : undefined;
    });
    await eventually("B to give the session up", async () => (await ownerOf(db, SESSION)) === undefined);
    const middle = (await stored()).slice(before.length);
    expect(middle.length).toBeGreaterThan(0);

    const url = `${c.url}/v1/sessions/${encodeURIComponent(SESSION)}/deliveries`;
    const onC = procs.record(new SseRecorder(url, { lastEventId: last }));
    await eventually("C's replay after the last seen id", () => ids(onC).length >= middle.length);
    expect(ids(onC)).toEqual(middle.map((row) => row.message_id));

    // Live on C: a turn on A (sent to A) reaches the client following C.
    expect((await post(a, SESSION, "one more", "f4")).disposition).toBe("started");
    const all = await eventually("the third reply stored", async () => {
      const rows = await stored();
      return rows.filter((row) => row.kind === "reply").length === 3 ? rows : undefined;
    });
    await eventually("C to receive it", () => ids(onC).length >= all.length - before.length);
    await eventually("A to receive it", () => ids(onA).length >= all.length);
    expect(ids(onC)).toEqual(all.slice(before.length).map((row) => row.message_id));
    expect(ids(onA)).toEqual(all.map((row) => row.message_id));
    expect(onC.opens).toBe(1);
  }, 60_000);
});
