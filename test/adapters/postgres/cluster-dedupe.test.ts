import { describe, expect, it } from "vitest";
import { createClusterSessions } from "../../../src/adapters/postgres/cluster-sessions.js";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// A clustered gateway dedupes through the inbox alone: its row and the message id are stored in one
// transaction. The store's dedupe window is a second record of the id, written when the owner applies
// the row; a process that takes a session over must not read that record as "already answered".

const db = usePostgresSchema("clusterdedupe");
const FAST = { leaseMs: 600, heartbeatMs: 200, pollMs: 100, ackWaitMs: 500 };
const clusteredGateway = useClusteredGateways(db);

describe("a clustered gateway's dedupe", () => {
  it("answers a message whose dead owner had claimed its id but never saved it", async () => {
    // The owner that died: it stored m1 in the inbox, claimed m1 in the store's dedupe window while
    // applying it, and was killed before the session's state held the message.
    const dead = await createClusterSessions({ url: db.url, schema: db.schema, processId: "dead", ...FAST });
    const body = { session: "web:1", channel: "web", text: "book a room", id: "m1" };
    expect(await dead.accept({ session: "web:1", messageId: "m1", mode: "default", body })).toMatchObject({
      kind: "local",
    });
    const deadStore = await PostgresStore.connect({ url: db.url, schema: db.schema, processId: "dead" });
    expect(await deadStore.claimMessageId("web:1", "m1", Date.now(), 0)).toBe(true);
    await deadStore.close();
    await dead.close();

    const { gateway, web } = await clusteredGateway("survivor", {
      model: (clock) => new ScriptedModel([{ reply: { text: "Re: {{latestUser}}" } }], clock),
      timing: FAST,
    });
    const acks: string[] = [];
    gateway.subscribe((event) => {
      if (event.type === "message.acked") acks.push(`${event.messageId} ${event.disposition}`);
    });
    await gateway.start();
    await eventually("the survivor to take the session over and settle m1", () => acks.length > 0);
    expect(acks).toEqual(["m1 started"]);
    await eventually("the survivor to answer m1", () => web.sent.some((m) => m.text === "Re: book a room"));
  }, 20_000);
});
