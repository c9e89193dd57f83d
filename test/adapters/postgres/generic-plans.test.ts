import pg from "pg";
import { describe, expect, it } from "vitest";
import { clientConfig } from "../../../src/adapters/postgres/connection.js";
import { type TestSchema, usePostgresSchema } from "../../support/postgres.js";
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

// A database whose connections plan every statement generically (an operator's
// plan_cache_mode=force_generic_plan, here given in the URL) runs the cluster as any other: every
// statement of a turn, from the accept to the web delivery, has a generic plan that does the same.

const db = usePostgresSchema("generic");
const procs = useServeProcesses("tiller-generic-pg");
const TASK_MS = 8000;

function withOptions(url: string, options: string): string {
  return `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(options)}`;
}

describe("PostgreSQL connections that plan generically", () => {
  it("keep the server settings of the URL next to the adapter's own", async () => {
    const url = withOptions(db.url, "-c plan_cache_mode=force_generic_plan -c statement_timeout=60000");
    const client = new pg.Client(clientConfig({ url, schema: db.schema }, { lock_timeout: "5000" }));
    await client.connect();
    try {
      const { rows } = await client.query<{ mode: string; path: string; timeout: string; lock: string }>(
        `SELECT current_setting('plan_cache_mode') AS mode, current_setting('search_path') AS path,
                current_setting('statement_timeout') AS timeout, current_setting('lock_timeout') AS lock`,
      );
      expect(rows).toEqual([{ mode: "force_generic_plan", path: db.schema, timeout: "1min", lock: "5s" }]);
    } finally {
      await client.end();
    }
  });

  it("answer, steer across processes, deliver and give sessions up as with custom plans", async () => {
    const generic: TestSchema = {
      url: withOptions(db.url, "-c plan_cache_mode=force_generic_plan"),
      schema: db.schema,
      get pool() {
        return db.pool;
      },
    };
    const [a, b] = (await startCluster(procs, generic, ["a", "b"], {
      config: { lanes: { main: 2 } },
      env: { TILLER_DEMO_TASK_MS: String(TASK_MS) },
    })) as [ClusterMember, ClusterMember];
    const onA = follow(procs, a, "web:g");
    expect((await post(a, "web:g", "please run a task", "g1")).disposition).toBe("started");
    await toolRunning(a, "web:g");
    // Sent to the other process while the turn runs: accepted there, applied by the owner, acked back.
    expect(await post(b, "web:g", "also mention pineapples", "g2")).toMatchObject({
      disposition: "steered",
      owner: a.processId,
    });
    const reply = await onA.waitFor((e) => e.event === "delivery" && e.data.kind === "reply", 60_000);
    expect(String(reply.data.text)).toContain('While it ran you wrote: "also mention pineapples"');
    await eventually("the session to be given up", async () =>
      (await ownerOf(db, "web:g")) === undefined ? true : undefined,
    );
    // A duplicate is one, whichever process it reaches; the next message is answered by its receiver.
    expect((await post(b, "web:g", "please run a task", "g1")).disposition).toBe("duplicate");
    const onB = follow(procs, b, "web:g");
    expect((await post(b, "web:g", "hello again", "g3")).disposition).toBe("started");
    await onB.waitFor((e) => e.event === "delivery" && String(e.data.text).includes("hello again"), 30_000);
    const { rows } = await db.pool.query<{ message_id: string; taken_by: string; received_by: string }>(
      `SELECT message_id, taken_by, received_by FROM ${db.schema}.inbox WHERE session_key = 'web:g' ORDER BY id`,
    );
    expect(rows).toEqual([
      { message_id: "g1", taken_by: a.processId, received_by: a.processId },
      { message_id: "g2", taken_by: a.processId, received_by: b.processId },
      { message_id: "g3", taken_by: b.processId, received_by: b.processId },
    ]);
    const { rows: sent } = await db.pool.query<{ kind: string }>(
      `SELECT kind FROM ${db.schema}.web_deliveries WHERE session_key = 'web:g' ORDER BY seq`,
    );
    expect(sent.filter((row) => row.kind === "reply")).toHaveLength(2);
  }, 120_000);
});
