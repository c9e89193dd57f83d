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
import type { SseRecorder } from "../../support/sse-recorder.js";

// kill -9 of the process that owns a session mid-turn, with a follow-up it had accepted and a message
// still waiting for it in the inbox: another process takes the session once the lease has run out,
// runs the cut-off turn again and answers every acknowledged message exactly once.

const db = usePostgresSchema("takeover");
const procs = useServeProcesses("tiller-takeover-pg");
const LEASE_MS = 2000;

interface Delivery {
  kind: string;
  text: string;
  deliveryId?: string;
}

function replies(recorders: SseRecorder[]): Delivery[] {
  return recorders
    .flatMap((r) => r.of("delivery").map((e) => e.data as unknown as Delivery))
    .filter((d) => d.kind === "reply");
}

describe("cluster sessions: takeover after kill -9", () => {
  it("answers every acknowledged message once after the owner dies mid-turn", async () => {
    const [a, b, c] = (await startCluster(procs, db, ["a", "b", "c"], {
      config: { lanes: { main: 3 } },
      args: ["--lease", String(LEASE_MS)],
      env: { TILLER_DEMO_TASK_MS: "4000" },
    })) as [ClusterMember, ClusterMember, ClusterMember];
    const session = "web:kill";
    const survivors = [follow(procs, a, session), follow(procs, c, session)];
    const onB = follow(procs, b, session);
    expect((await post(b, session, "please run a task", "k1")).disposition).toBe("started");
    await toolRunning(b, session);
    const followUp = await post(a, session, "and then this too", "k2", "followup");
    expect(followUp).toMatchObject({ disposition: "queued", owner: b.processId });

    b.proc.kill("SIGKILL");
    await b.exited;
    procs.live.delete(b);
    const killedAt = Date.now();
    // B's lease still runs: C forwards to it, hears nothing, and says the message is stored.
    const late = await post(c, session, "one more thing", "k3");
    expect(["queued", "steered", "started"]).toContain(late.disposition);
    // Forwarded to the dead owner: never acked by it; the ack says the message is stored, or comes from
    // the process that took the session over in the meantime.
    if (late.owner === b.processId) expect(late.disposition).toBe("queued");
    else expect(late.text).not.toContain(b.processId);
    const { rows: waiting } = await db.pool.query(
      `SELECT 1 FROM ${db.schema}.inbox WHERE session_key = $1 AND message_id = 'k3'`,
      [session],
    );
    expect(waiting).toHaveLength(1);

    const heir = await eventually("another process to own the session", async () => {
      const owner = await ownerOf(db, session);
      return owner === a.processId || owner === c.processId ? owner : undefined;
    });
    const tookMs = Date.now() - killedAt;
    expect(heir).not.toBe(b.processId);
    expect(tookMs).toBeLessThan(LEASE_MS + 10_000);

    // Every acknowledged message is answered, by the survivors.
    await eventually(
      "answers to k1, k2 and k3",
      () => {
        // Each survivor streams the session's deliveries, wherever they were made: A's suffices.
        const texts = replies(survivors.slice(0, 1)).map((d) => d.text);
        return (
          texts.some((t) => t.includes("demo_task")) &&
          texts.some((t) => t.includes("and then this too")) &&
          texts.some((t) => t.includes("one more thing"))
        );
      },
      40_000,
    );
    await eventually("the session to be given up", async () =>
      (await ownerOf(db, session)) === undefined ? true : undefined,
    );
    await eventually(
      "C's stream to hold what A's does",
      () => replies([survivors[1]!]).length >= replies([survivors[0]!]).length,
    );
    for (const survivor of survivors) {
      const all = replies([survivor]);
      // Exactly once: no delivery twice, each message in one reply only, the cut-off turn answered once.
      expect(all.filter((d) => d.text.includes("and then this too"))).toHaveLength(1);
      expect(all.filter((d) => d.text.includes("one more thing"))).toHaveLength(1);
      // The cut-off turn ran again once: its tool call has a result saying it was cut off, and one answer.
      expect(all.filter((d) => d.text.includes("demo_task"))).toHaveLength(1);
    }
    expect(replies([survivors[1]!])).toEqual(replies([survivors[0]!]));
    expect(replies([onB])).toHaveLength(0);

    const { rows } = await db.pool.query<{ body: string }>(
      `SELECT body FROM ${db.schema}.transcript WHERE session_key = $1 ORDER BY seq`,
      [session],
    );
    const records = rows.map(
      (row) =>
        JSON.parse(row.body) as { role: string; messageId?: string; deliveryId?: string; status?: string },
    );
    // Each stored answer was delivered once, under its own delivery id.
    const finals = records.filter((r) => r.role === "assistant");
    expect(finals).toHaveLength(replies(survivors.slice(0, 1)).length);
    expect(new Set(finals.map((r) => r.deliveryId)).size).toBe(finals.length);
    expect(records.filter((r) => r.role === "toolResult")).toHaveLength(1);
    const users = records.filter((r) => r.role === "user").map((r) => r.messageId);
    expect(users.sort()).toEqual(["k1", "k2", "k3"]);
    const { rows: left } = await db.pool.query(
      `SELECT message_id FROM ${db.schema}.inbox WHERE session_key = $1 AND taken_at IS NULL`,
      [session],
    );
    expect(left).toEqual([]);
  }, 120_000);
});
