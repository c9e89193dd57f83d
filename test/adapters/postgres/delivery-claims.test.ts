import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { countStatements } from "../../support/statement-count.js";

// The claims and settles of sends one process makes at once go to the database in one statement each;
// every claim is still judged alone (a send another process holds is refused, with how long it holds).

const db = usePostgresSchema("claimbatch");
const open: PostgresStore[] = [];

afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

async function connect(processId: string) {
  const store = await PostgresStore.connect({
    url: db.url,
    schema: db.schema,
    processId,
    deliveryLeaseMs: 60_000,
  });
  open.push(store);
  return store;
}

describe("send claims of several sessions at once", () => {
  it("share one statement to claim and one to settle, each judged alone", async () => {
    const here = await connect("claims-here");
    const other = await connect("claims-other");
    expect(await other.deliveryClaims.claim("web:c1", "d1")).toEqual({ kind: "claimed" });
    await here.deliveryClaims.claim("web:c2", "d2");
    await here.deliveryClaims.settle("web:c2", "d2", { kind: "sent", messageId: "out-2" });

    const claims = await countStatements(
      () =>
        Promise.all(
          ["web:c0", "web:c1", "web:c2", "web:c3"].map((session, i) =>
            here.deliveryClaims.claim(session, `d${i}`),
          ),
        ),
      "tiller.claimSends",
    );
    expect(claims.count).toBe(1);
    expect(claims.result[0]).toEqual({ kind: "claimed" });
    // Held by the other process: refused, for about its lease.
    expect(claims.result[1]).toMatchObject({ kind: "held" });
    expect((claims.result[1] as { retryInMs: number }).retryInMs).toBeGreaterThan(50_000);
    // Sent already: the message it became.
    expect(claims.result[2]).toEqual({ kind: "sent", messageId: "out-2" });
    expect(claims.result[3]).toEqual({ kind: "claimed" });

    const settles = await countStatements(
      () =>
        Promise.all([
          here.deliveryClaims.settle("web:c0", "d0", { kind: "sent", messageId: "out-0" }),
          here.deliveryClaims.settle("web:c3", "d3", { kind: "failed" }),
          // Not this process's claim: left as it is.
          here.deliveryClaims.settle("web:c1", "d1", { kind: "sent", messageId: "stolen" }),
        ]),
      "tiller.settleSends",
    );
    expect(settles.count).toBe(1);
    const { rows } = await db.pool.query(
      `SELECT session_key, owner, state, message_id FROM ${db.schema}.delivery_claims ORDER BY session_key`,
    );
    expect(rows).toEqual([
      { session_key: "web:c0", owner: "claims-here", state: "sent", message_id: "out-0" },
      { session_key: "web:c1", owner: "claims-other", state: "sending", message_id: null },
      { session_key: "web:c2", owner: "claims-here", state: "sent", message_id: "out-2" },
      { session_key: "web:c3", owner: "claims-here", state: "failed", message_id: null },
    ]);
    // A failed send may be claimed again (its one resend).
    expect(await here.deliveryClaims.claim("web:c3", "d3")).toEqual({ kind: "claimed" });
  });
});
