import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { usePostgresSchema } from "../../support/postgres.js";
import {
  type ClusterMember,
  eventually,
  ownerOf,
  post,
  sessionDetail,
  startCluster,
} from "../../support/serve-cluster.js";
import { useServeProcesses } from "../../support/serve-process.js";

// kill -9 of the process that runs a parent's turn while its subagent runs: another process takes the
// parent over and runs its cut-off turn again once (the model sees the tool call cut off). The old
// child's turn is never run again on its own (its tool died with the process), nothing of it is
// delivered, and the parent's next child gets a new key.

const db = usePostgresSchema("subtakeover");
const procs = useServeProcesses("tiller-subagent-takeover");
const LEASE_MS = 2000;

/** The `--tools` file: `delegate` hands the work to a subagent, which the demo model runs as its slow task. */
const TOOLS = `export default [{
  name: "delegate",
  description: "Hands the work to a subagent.",
  cancellable: true,
  execute: (args, context) => context.runSubagent({ text: "please run a task for the report" }),
}];
`;

interface Row {
  session_key: string;
  body: string;
}

async function records(session: string) {
  const { rows } = await db.pool.query<Row>(
    `SELECT session_key, body FROM ${db.schema}.transcript WHERE session_key = $1 ORDER BY seq`,
    [session],
  );
  return rows.map((row) => JSON.parse(row.body) as { role: string; text?: string; customType?: string });
}

describe("a subagent when its parent's process is killed", () => {
  it("runs the parent's cut-off turn again once and never the old child on its own", async () => {
    const tools = join(procs.dir, "delegate-tools.mjs");
    await writeFile(tools, TOOLS);
    const [a, b, c] = (await startCluster(procs, db, ["a", "b", "c"], {
      config: { lanes: { main: 3 } },
      args: ["--lease", String(LEASE_MS), "--tools", tools],
      env: { TILLER_DEMO_TASK_MS: "4000" },
    })) as [ClusterMember, ClusterMember, ClusterMember];
    const parent = "web:dk";
    const oldChild = `${parent}:sub:1`;
    expect((await post(b, parent, "please delegate the report", "d1")).disposition).toBe("started");
    await eventually("the child's slow task to run on B", async () => {
      return (await sessionDetail(b, oldChild)).run?.currentTool === "demo_task";
    });
    // The child is B's while it runs, as its parent is.
    expect(await ownerOf(db, oldChild)).toBe(b.processId);
    expect(await ownerOf(db, parent)).toBe(b.processId);
    // GET /v1/sessions/{key} on any process says so.
    expect((await sessionDetail(a, oldChild)).owner).toBe(b.processId);

    b.proc.kill("SIGKILL");
    await b.exited;
    procs.live.delete(b);

    const replies = async () => {
      const { rows } = await db.pool.query<{ session_key: string; kind: string; text: string }>(
        `SELECT session_key, kind, text FROM ${db.schema}.web_deliveries ORDER BY session_key, seq`,
      );
      return rows;
    };
    const answered = (what: string) => async () =>
      (await replies()).some((d) => d.kind === "reply" && d.text.includes(what));
    await eventually("the parent's answer after the takeover", answered("delegate did not finish"), 40_000);
    await eventually("the parent to be given up", async () => !(await ownerOf(db, parent)));
    // The parent's next child, wherever it runs, counts on from the old one.
    expect((await post(c, parent, "please delegate the summary", "d2")).disposition).toBe("started");
    await eventually("the answer with the new child's work", answered("delegate finished"), 40_000);
    await eventually("every session to be given up", async () => {
      const { rows } = await db.pool.query(`SELECT 1 FROM ${db.schema}.session_owners`);
      return rows.length === 0;
    });
    // The old child was taken over and its cut-off turn dropped (its state cleared), not resumed.
    await eventually("the old child's state to be cleared", async () => {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM ${db.schema}.session_state WHERE session_key = $1`,
        [oldChild],
      );
      return rows.length === 0;
    });

    // Delivered once each, on the parent only: the cut-off turn's answer and the next one, nothing of
    // either child.
    const delivered = await replies();
    expect(delivered.every((d) => d.session_key === parent)).toBe(true);
    expect(delivered.filter((d) => d.kind === "reply").map((d) => d.text.split("\n\n").at(-1))).toEqual([
      "delegate did not finish (cancelled).",
      expect.stringContaining("delegate finished"),
    ]);
    const { rows: keys } = await db.pool.query<{ session_key: string }>(
      `SELECT session_key FROM ${db.schema}.sessions WHERE session_key LIKE $1 ORDER BY session_key`,
      [`${parent}:sub:%`],
    );
    expect(keys.map((row) => row.session_key)).toEqual([oldChild, `${parent}:sub:2`]);
    const fresh = await records(`${parent}:sub:2`);
    expect(fresh.filter((r) => r.role === "user")).toHaveLength(1);
    expect(fresh.filter((r) => r.role === "assistant")).toHaveLength(1);
    // The old child's task ran once (on B, cut off): one tool call, no answer, and a record saying why.
    const old = await records(oldChild);
    expect(old.filter((r) => r.role === "toolCall")).toHaveLength(1);
    expect(old.filter((r) => r.role === "assistant")).toEqual([]);
    expect(old.filter((r) => r.customType === "tiller.subagent-cut-off")).toHaveLength(1);
    // Nothing waits in the inbox for anyone.
    const { rows: left } = await db.pool.query(
      `SELECT message_id FROM ${db.schema}.inbox WHERE taken_at IS NULL`,
    );
    expect(left).toEqual([]);
    // A and C are still healthy.
    expect((await sessionDetail(a, parent)).state).toBe("idle");
    expect((await sessionDetail(c, parent)).state).toBe("idle");
  }, 120_000);
});
