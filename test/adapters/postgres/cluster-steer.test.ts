import { describe, expect, it } from "vitest";
import { usePostgresSchema } from "../../support/postgres.js";
import {
  type ClusterMember,
  eventually,
  follow,
  ownerOf,
  post,
  sessionDetail,
  startCluster,
  toolRunning,
} from "../../support/serve-cluster.js";
import { useServeProcesses } from "../../support/serve-process.js";

// Three real `tiller serve --postgres` processes on one schema: a message sent to any of them reaches
// the process that runs the session's turn. The demo model answers from the context of its model call
// after the slow tool, so a steer it saw is in its reply.

const db = usePostgresSchema("steer");
const procs = useServeProcesses("tiller-steer-pg");

let cluster: ClusterMember[] = [];
// Long enough that the checks and the steer made while the tool runs (several requests to real
// processes) fit in it on a loaded machine; the tests that stop the task do not wait for it.
const TASK_MS = 10_000;

describe("cluster sessions: messages reach the owner of the turn", () => {
  it("starts three processes", async () => {
    cluster = await startCluster(procs, db, ["a", "b", "c"], {
      config: { lanes: { main: 3 } },
      env: { TILLER_DEMO_TASK_MS: String(TASK_MS) },
    });
    expect(new Set(cluster.map((m) => m.processId)).size).toBe(3);
  }, 60_000);

  it("a steer sent to A for a turn running on B is in B's next model call", async () => {
    const [a, b] = cluster as [ClusterMember, ClusterMember];
    const onB = follow(procs, b, "web:steer");
    const onA = follow(procs, a, "web:steer");
    expect((await post(b, "web:steer", "please run a task", "s1")).disposition).toBe("started");
    await toolRunning(b, "web:steer");
    expect(await ownerOf(db, "web:steer")).toBe(b.processId);
    // The HTTP API of any process says who owns the session, and that its turn runs there: the state of
    // its lane run in the database, the run id the owner stored, not the idle session A holds nothing of.
    const here = await sessionDetail(b, "web:steer");
    expect(here).toMatchObject({
      state: "turn.running",
      owner: b.processId,
      run: { currentTool: "demo_task" },
    });
    expect(here.run).not.toHaveProperty("process");
    const there = await sessionDetail(a, "web:steer");
    expect(there).toMatchObject({
      state: "turn.running",
      owner: b.processId,
      run: { runId: here.run!.runId, state: "running", process: b.processId, lane: "main" },
      lane: { active: 1, queued: 0, capacity: 3 },
      queue: [],
    });
    const listed = (await (await fetch(`${a.url}/v1/sessions`)).json()) as {
      sessions: Array<{ key: string; state: string; run: { process?: string } | null }>;
    };
    expect(listed.sessions.find((s) => s.key === "web:steer")).toMatchObject({
      state: "turn.running",
      run: { process: b.processId },
    });

    const ack = await post(a, "web:steer", "also mention pineapples", "s2");
    expect(ack).toMatchObject({ disposition: "steered", owner: b.processId, waitsFor: "tool-to-finish" });
    // The owner is a field for clients; the text a user reads names no internal process.
    expect(ack.text).not.toContain(b.processId);

    const reply = await onB.waitFor((e) => e.event === "delivery" && e.data.kind === "reply", 60_000);
    expect(String(reply.data.text)).toContain('While it ran you wrote: "also mention pineapples"');
    // One reply, from the owner only; the receiving process sends nothing for it.
    await eventually("the session to go idle and be given up", async () =>
      (await ownerOf(db, "web:steer")) === undefined ? true : undefined,
    );
    const replies = onB.of("delivery").filter((e) => e.data.kind === "reply");
    expect(replies).toHaveLength(1);
    // A client following A sees the same reply (the deliveries are the cluster's), once.
    await onA.waitFor((e) => e.id === replies[0]!.id, 10_000);
    expect(
      onA
        .of("delivery")
        .filter((e) => e.data.kind === "reply")
        .map((e) => e.id),
    ).toEqual([replies[0]!.id]);
    const { rows } = await db.pool.query<{ message_id: string; taken_by: string; received_by: string }>(
      `SELECT message_id, taken_by, received_by FROM ${db.schema}.inbox WHERE session_key = 'web:steer' ORDER BY id`,
    );
    expect(rows).toEqual([
      { message_id: "s1", taken_by: b.processId, received_by: b.processId },
      { message_id: "s2", taken_by: b.processId, received_by: a.processId },
    ]);
  }, 120_000);

  it("/stop sent to A stops the run on B", async () => {
    const [a, b] = cluster as [ClusterMember, ClusterMember];
    expect((await post(b, "web:stop", "run a task please", "t1")).disposition).toBe("started");
    await toolRunning(b, "web:stop");
    const ack = await post(a, "web:stop", "/stop", "t2");
    expect(ack).toMatchObject({ disposition: "control", owner: b.processId });
    expect(ack.text).toContain("Stopping the current reply");
    await eventually("B's run to end", async () => (await sessionDetail(b, "web:stop")).state === "idle");
    // The tool was cut off, not finished: the stop acted where the run was.
    const { rows } = await db.pool.query<{ body: string }>(
      `SELECT body FROM ${db.schema}.transcript WHERE session_key = 'web:stop' ORDER BY seq`,
    );
    const results = rows
      .map((row) => JSON.parse(row.body) as { role: string; status?: string })
      .filter((r) => r.role === "toolResult");
    expect(results.length).toBeGreaterThan(0);
    expect(results.every((r) => r.status !== "done")).toBe(true);
  }, 60_000);

  it("an interrupt sent to C stops B's turn and runs there next", async () => {
    const [, b, c] = cluster as [ClusterMember, ClusterMember, ClusterMember];
    const onB = follow(procs, b, "web:int");
    expect((await post(b, "web:int", "run a task for me", "i1")).disposition).toBe("started");
    await toolRunning(b, "web:int");
    const ack = await post(c, "web:int", "forget that, say hi", "i2", "interrupt");
    expect(ack).toMatchObject({ disposition: "interrupted", owner: b.processId });
    const reply = await onB.waitFor((e) => e.event === "delivery" && e.data.kind === "reply", 20_000);
    expect(String(reply.data.text)).toContain("forget that, say hi");
  }, 60_000);

  it("/queue and /new sent to other processes act on the session where it runs", async () => {
    const [a, b, c] = cluster as [ClusterMember, ClusterMember, ClusterMember];
    expect((await post(b, "web:ctl", "run a task now", "q1")).disposition).toBe("started");
    await toolRunning(b, "web:ctl");
    const queue = await post(a, "web:ctl", "/queue followup", "q2");
    expect(queue).toMatchObject({ disposition: "control", owner: b.processId });
    // The owner's setting decides: a plain message sent to C now waits for its own turn on B.
    const next = await post(c, "web:ctl", "what about this", "q3");
    expect(next).toMatchObject({ disposition: "queued", mode: "followup", owner: b.processId });
    const reset = await post(c, "web:ctl", "/new", "q4");
    expect(reset).toMatchObject({ disposition: "control", owner: b.processId });
    // The owner resets the transcript (a new revision) once its stopped run has ended.
    await eventually("the reset on B", async () => {
      const { rows } = await db.pool.query<{ revision: number }>(
        `SELECT revision FROM ${db.schema}.sessions WHERE session_key = 'web:ctl'`,
      );
      return rows[0]?.revision === 2;
    });
  }, 60_000);

  it("a message id sent to two processes is a duplicate at the second", async () => {
    const [a, , c] = cluster as [ClusterMember, ClusterMember, ClusterMember];
    expect((await post(a, "web:dup", "hello there", "d1")).disposition).toBe("started");
    const second = await post(c, "web:dup", "hello there", "d1");
    expect(second.disposition).toBe("duplicate");
    const { rows } = await db.pool.query(
      `SELECT 1 FROM ${db.schema}.inbox WHERE session_key = 'web:dup' AND message_id = 'd1'`,
    );
    expect(rows).toHaveLength(1);
  }, 30_000);
});
