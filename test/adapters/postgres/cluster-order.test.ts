import { describe, expect, it } from "vitest";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// A gateway author who calls receive() for a session's messages one after another, without waiting
// for each ack, expects them answered in that order. In a cluster each message is first committed to
// the inbox, on a pool of connections: the inbox must keep the order of the calls, not of the commits.

const db = usePostgresSchema("clusterorder");
const FAST = { leaseMs: 2000, heartbeatMs: 500, pollMs: 100, ackWaitMs: 1000 };
const clusteredGateway = useClusteredGateways(db);

describe("a clustered gateway's inbox", () => {
  it("keeps the order in which one process received a session's messages", async () => {
    const { gateway, web } = await clusteredGateway("p1", {
      model: (clock) => new ScriptedModel([{ reply: { text: "Re: {{latestUser}}" } }], clock),
      timing: FAST,
    });
    await gateway.start();
    const sessions = ["web:a", "web:b", "web:c"];
    const count = 8;
    const acks = [];
    for (let n = 0; n < count; n++)
      for (const session of sessions)
        acks.push(
          gateway.receive({
            session,
            channel: "web",
            text: `q${n}`,
            id: `${session}-${n}`,
            mode: "followup",
          }),
        );
    await Promise.all(acks);
    await eventually("every message to be answered", () => web.sent.length === sessions.length * count);
    for (const session of sessions) {
      const replies = web.sent.filter((m) => m.session === session).map((m) => m.text);
      expect(replies).toEqual(Array.from({ length: count }, (_, n) => `Re: q${n}`));
      const { rows } = await db.pool.query<{ body: string }>(
        `SELECT body FROM ${db.schema}.transcript WHERE session_key = $1 ORDER BY seq`,
        [session],
      );
      const stored = rows
        .map((row) => JSON.parse(row.body))
        .filter((r) => r.role === "user")
        .map((r) => r.text);
      expect(stored).toEqual(Array.from({ length: count }, (_, n) => `q${n}`));
    }
  }, 30_000);
});
