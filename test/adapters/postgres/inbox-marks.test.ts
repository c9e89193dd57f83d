import { afterEach, describe, expect, it } from "vitest";
import {
  type ClusterSessions,
  createClusterSessions,
} from "../../../src/adapters/postgres/cluster-sessions.js";
import type { InboxEntry } from "../../../src/ports/session-cluster.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { countStatements } from "../../support/statement-count.js";

// The rows that an owner applies for several sessions at once are marked in one statement, and each
// receiver elsewhere still gets its own ack, once.

const db = usePostgresSchema("marks");
const FAST = { leaseMs: 2000, heartbeatMs: 500, pollMs: 100, ackWaitMs: 2000 };
const open: ClusterSessions[] = [];

async function member(processId: string): Promise<ClusterSessions> {
  const handle = await createClusterSessions({ url: db.url, schema: db.schema, processId, ...FAST });
  open.push(handle);
  return handle;
}

afterEach(async () => {
  for (const handle of open.splice(0)) await handle.close();
});

const message = (session: string, id: string) => ({
  session,
  messageId: id,
  mode: "default",
  body: { session, channel: "web", text: id, id },
});

describe("applied marks of several sessions at once", () => {
  it("share one statement, and each receiver gets its own ack", async () => {
    const owner = await member("mo");
    const receiver = await member("mr");
    const sessions = ["web:k0", "web:k1", "web:k2"];
    // The owner takes each session with a first message; the receiver's messages are then forwarded.
    for (const session of sessions) await owner.accept(message(session, "first"));
    const forwarded: string[] = [];
    for (const session of sessions) {
      const acceptance = await receiver.accept(message(session, "second"));
      expect(acceptance).toMatchObject({ kind: "remote", owner: "mo" });
      forwarded.push((acceptance as { id: string }).id);
    }
    const waiting: InboxEntry[] = [];
    for (const session of sessions) waiting.push(...(await owner.waiting(session)));
    expect(waiting).toHaveLength(6);
    const acks = forwarded.map((id) => receiver.awaitAck(id, 10_000));

    // Only the marks count: the receiver's reads of its acks go meanwhile.
    const { count: statements } = await countStatements(
      () =>
        Promise.all(waiting.map((entry) => owner.applied(entry, { disposition: "started", n: entry.id }))),
      "tiller.inboxAppliedAll",
    );
    // Marked in the same tick: one batch.
    expect(statements).toBe(1);

    const answers = await Promise.all(acks);
    expect(answers).toEqual(forwarded.map((id) => ({ ack: { disposition: "started", n: id }, by: "mo" })));
    // Marked once: marking again changes nothing.
    await owner.applied(waiting[0]!, { disposition: "other" });
    const { rows } = await db.pool.query(`SELECT ack FROM ${db.schema}.inbox WHERE id = $1`, [
      waiting[0]!.id,
    ]);
    expect(rows[0].ack).toEqual({ disposition: "started", n: waiting[0]!.id });
    for (const session of sessions) expect(await owner.waiting(session)).toEqual([]);
  });
});
