import { afterEach, describe, expect, it } from "vitest";
import {
  type ClusterSessions,
  createClusterSessions,
} from "../../../src/adapters/postgres/cluster-sessions.js";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { usePostgresSchema } from "../../support/postgres.js";

// A session's state saves between turns carry its ownership token: once another process has taken the
// session over (the owner was paused or cut off past its lease), the old owner's saves are refused and
// the new owner's state stays.

const db = usePostgresSchema("ownerfence");
const open: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const handle of open.splice(0).reverse()) await handle.close();
});

async function ownerWithStore(
  processId: string,
): Promise<{ cluster: ClusterSessions; store: PostgresStore }> {
  const cluster = await createClusterSessions({
    url: db.url,
    schema: db.schema,
    processId,
    leaseMs: 5000,
    heartbeatMs: 1000,
    pollMs: 60_000,
  });
  const store = await PostgresStore.connect({
    url: db.url,
    schema: db.schema,
    processId,
    fences: { fenceFor: () => undefined, ownerFenceFor: (session) => cluster.ownershipFence(session) },
  });
  open.push(cluster, store);
  return { cluster, store };
}

const body = { session: "web:f", channel: "web", text: "hi", id: "m1" };

describe("state saves fenced by the session's ownership", () => {
  it("refuses the old owner's save once another process owns the session", async () => {
    const { cluster, store } = await ownerWithStore("fa");
    expect(await cluster.accept({ session: "web:f", messageId: "m1", mode: "default", body })).toMatchObject({
      kind: "local",
    });
    expect(cluster.ownershipFence("web:f")).toMatchObject({ owner: "fa", fence: expect.any(Number) });
    await store.saveState("web:f", { turn: "first owner's" });

    // Another process took the session over while this one was cut off: a new owner, a new token.
    await db.pool.query(
      `UPDATE ${db.schema}.session_owners SET owner = 'fb', fence = nextval('${db.schema}.fence_seq') WHERE session_key = 'web:f'`,
    );
    await db.pool.query(
      `UPDATE ${db.schema}.session_state SET state = '{"turn":"new owner''s"}' WHERE session_key = 'web:f'`,
    );
    await expect(store.saveState("web:f", { turn: "stale" })).rejects.toMatchObject({ code: "LEASE_LOST" });
    await expect(store.saveState("web:f", null)).rejects.toMatchObject({ code: "LEASE_LOST" });
    expect(await store.loadState("web:f")).toEqual({ turn: "new owner's" });
  });

  it("leaves saves of sessions this process does not own as they were (one process, or nobody's)", async () => {
    const { store } = await ownerWithStore("fc");
    await store.saveState("web:free", { queue: [] });
    expect(await store.loadState("web:free")).toEqual({ queue: [] });
  });

  it("saves many sessions at once (committed together), refusing only the one whose owner changed", async () => {
    const { cluster, store } = await ownerWithStore("fd");
    const sessions = ["web:g0", "web:g1", "web:g2", "web:g3", "web:g4"];
    for (const session of sessions)
      await cluster.accept({ session, messageId: "m1", mode: "default", body: { ...body, session } });
    await Promise.all(sessions.map((session) => store.saveState(session, { turn: "before" })));
    // web:g2 was taken over; web:g4's state is deleted in the same batch.
    await db.pool.query(
      `UPDATE ${db.schema}.session_owners SET owner = 'fe', fence = nextval('${db.schema}.fence_seq') WHERE session_key = 'web:g2'`,
    );
    const saves = await Promise.allSettled(
      sessions.map((session, i) => store.saveState(session, i === 4 ? null : { turn: `after ${i}` })),
    );
    expect(saves.map((save) => save.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    expect((saves[2] as PromiseRejectedResult).reason).toMatchObject({
      code: "LEASE_LOST",
      session: "web:g2",
    });
    expect(await Promise.all(sessions.map((session) => store.loadState(session)))).toEqual([
      { turn: "after 0" },
      { turn: "after 1" },
      { turn: "before" },
      { turn: "after 3" },
      null,
    ]);
  });
});
