import { afterEach, describe, expect, it } from "vitest";
import {
  type ClusterSessions,
  createClusterSessions,
} from "../../../src/adapters/postgres/cluster-sessions.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// The ownership and inbox adapter on its own, two handles on one schema as two processes: who applies a
// message, cluster-wide dedupe, the wake-up and the ack coming back, release only with nothing waiting,
// and a session taken over once its owner's lease ran out.

const db = usePostgresSchema("sessions");
const FAST = { leaseMs: 900, heartbeatMs: 250, pollMs: 100, ackWaitMs: 2000 };
const open: ClusterSessions[] = [];

async function member(processId: string): Promise<ClusterSessions> {
  const handle = await createClusterSessions({ url: db.url, schema: db.schema, processId, ...FAST });
  open.push(handle);
  return handle;
}

const body = (id: string) => ({ session: "web:s", channel: "web", text: `text of ${id}`, id });

afterEach(async () => {
  for (const handle of open.splice(0)) await handle.close();
});

describe("createClusterSessions", () => {
  it("makes the first receiver the owner, forwards to it from elsewhere, and brings its ack back", async () => {
    const a = await member("pa");
    const b = await member("pb");
    const woken: string[] = [];
    a.onWake((session, adopted) => woken.push(`${session}:${adopted}`));
    expect(
      await a.accept({ session: "web:s", messageId: "m1", mode: "default", body: body("m1") }),
    ).toMatchObject({
      kind: "local",
      adopted: true,
    });
    const [first] = await a.waiting("web:s");
    await a.applied(first!, { disposition: "started" });

    // The same id at another process: a duplicate; a new one: forwarded to the owner, which is woken.
    expect(await b.accept({ session: "web:s", messageId: "m1", mode: "default", body: body("m1") })).toEqual({
      kind: "duplicate",
    });
    const forwarded = await b.accept({ session: "web:s", messageId: "m2", mode: "steer", body: body("m2") });
    expect(forwarded).toMatchObject({ kind: "remote", owner: "pa" });
    await eventually("the owner to be woken", () => woken.includes("web:s:false"));
    // Only the owner sees what waits.
    expect(await b.waiting("web:s")).toEqual([]);
    const waiting = await a.waiting("web:s");
    expect(waiting.map((e) => [e.messageId, e.receivedBy, (e.body as { text?: string }).text])).toEqual([
      ["m2", "pb", "text of m2"],
    ]);

    // The owner cannot give the session up while a message waits for it.
    expect(await a.release("web:s")).toBe(false);
    const acked = b.awaitAck((forwarded as { id: string }).id, 5000);
    await a.applied(waiting[0]!, { disposition: "steered", text: "in the run" });
    expect(await acked).toEqual({ ack: { disposition: "steered", text: "in the run" }, by: "pa" });
    expect((await a.owners(["web:s", "web:none"])).get("web:s")).toBe("pa");
    expect(await a.release("web:s")).toBe(true);
    expect(await a.owners(["web:s"])).toEqual(new Map());

    // Nobody owns it now: the next receiver becomes the owner.
    expect(
      await b.accept({ session: "web:s", messageId: "m3", mode: "default", body: body("m3") }),
    ).toMatchObject({
      kind: "local",
      adopted: true,
    });
  });

  it("names the older messages still waiting when it accepts one, and none once they are applied", async () => {
    const a = await member("oa");
    const accept = (id: string) =>
      a.accept({ session: "web:o", messageId: id, mode: "followup", body: body(id) }) as Promise<{
        id: string;
        alone?: boolean;
        older?: string[];
      }>;
    const first = await accept("m1");
    expect(first).toMatchObject({ kind: "local", alone: true });
    const second = await accept("m2");
    expect(second.older).toEqual([first.id]);
    const third = await accept("m3");
    expect(third.older).toEqual([first.id, second.id]);
    for (const entry of await a.waiting("web:o")) await a.applied(entry, { disposition: "started" });
    expect(await accept("m4")).toMatchObject({ kind: "local", alone: true });
  });

  it("gives up waiting for an owner that does not answer", async () => {
    const a = await member("qa");
    const b = await member("qb");
    await a.accept({ session: "web:q", messageId: "m1", mode: "default", body: body("m1") });
    const forwarded = await b.accept({
      session: "web:q",
      messageId: "m2",
      mode: "default",
      body: body("m2"),
    });
    expect(await b.awaitAck((forwarded as { id: string }).id, 300)).toBeUndefined();
  });

  it("lets another process take a session over, with what waits for it, once the owner's lease ran out", async () => {
    const a = await member("ra");
    const b = await member("rb");
    await a.accept({ session: "web:r", messageId: "m1", mode: "default", body: body("m1") });
    const taken: string[] = [];
    b.onWake((session, adopted) => {
      if (adopted) taken.push(session);
    });
    // A stops renewing (as a killed process does): its lease runs out, and B's poll takes the session.
    const renewed = await db.pool.query(
      `SELECT lease_until FROM ${db.schema}.session_owners WHERE session_key = 'web:r' AND owner = 'ra'`,
    );
    expect(renewed.rows).toHaveLength(1);
    await a.close();
    await db.pool.query(
      `INSERT INTO ${db.schema}.session_owners (session_key, owner, fence, lease_until)
       VALUES ('web:r', 'ra', 0, clock_timestamp() + interval '300 milliseconds')`,
    );
    await eventually("B to take the session over", () => taken.includes("web:r"), 10_000);
    expect((await b.owners(["web:r"])).get("web:r")).toBe("rb");
    expect((await b.waiting("web:r")).map((e) => e.messageId)).toEqual(["m1"]);
  });

  it("tells the owner when its lease ran out before a renewal and another process took the session", async () => {
    const a = await member("la");
    const lost: string[] = [];
    a.onLost?.((session) => lost.push(session));
    await a.accept({ session: "web:l", messageId: "m1", mode: "default", body: body("m1") });
    await a.accept({ session: "web:kept", messageId: "m1", mode: "default", body: body("m1") });
    // As after a long pause: the lease ran out before the heartbeat came, and another process took it.
    await db.pool.query(
      `UPDATE ${db.schema}.session_owners SET lease_until = clock_timestamp() - interval '1 second',
              owner = 'other', fence = nextval('${db.schema}.fence_seq') WHERE session_key = 'web:l'`,
    );
    await eventually("the loss to be noticed", () => lost.includes("web:l"), 5000);
    expect(lost).toEqual(["web:l"]);
  });

  it("takes no session over for a lease after its own calls failed: the live owner renews first", async () => {
    // Each process on a clock of its own, advanced by hand: a step ran once its next timer is set.
    const ca = new SimulatedClock();
    const cb = new SimulatedClock();
    const a = await createClusterSessions({
      ...{ url: db.url, schema: db.schema, processId: "wa" },
      ...{ leaseMs: 900, heartbeatMs: 250, pollMs: 60_000, clock: ca },
    });
    const b = await createClusterSessions({
      ...{ url: db.url, schema: db.schema, processId: "wb" },
      ...{ leaseMs: 900, heartbeatMs: 60_000, pollMs: 100, clock: cb },
    });
    open.push(a, b);
    const lost: string[] = [];
    a.onLost?.((session) => lost.push(session));
    const taken: string[] = [];
    b.onWake((session, adopted) => {
      if (adopted) taken.push(session);
    });
    const stepped = (clock: SimulatedClock) =>
      eventually("the step to end", () => clock.pendingTimers === 2 && clock.nextTimerAt() !== clock.now());
    await stepped(ca);
    await stepped(cb);
    await a.accept({ session: "web:w", messageId: "m1", mode: "default", body: body("m1") });
    // The database is away for B's poll (the table it reads is gone), and A's lease runs out.
    await db.pool.query(`ALTER TABLE ${db.schema}.session_owners RENAME TO session_owners_away`);
    await cb.advance(100);
    await stepped(cb);
    await db.pool.query(`ALTER TABLE ${db.schema}.session_owners_away RENAME TO session_owners`);
    await db.pool.query(
      `UPDATE ${db.schema}.session_owners SET lease_until = clock_timestamp() - interval '1 second'
        WHERE session_key = 'web:w'`,
    );
    // Back: B's next poll, within a lease of its failure, leaves the session to its owner.
    await cb.advance(100);
    await stepped(cb);
    expect(taken).toEqual([]);
    // A's renewal keeps it, under the same token.
    await ca.advance(250);
    await stepped(ca);
    expect(lost).toEqual([]);
    expect((await b.owners(["web:w"])).get("web:w")).toBe("wa");
  });

  it("prunes applied messages past the dedupe window once a tenth of the window, not on every poll", async () => {
    const clock = new SimulatedClock();
    const a = await createClusterSessions({
      ...{ url: db.url, schema: db.schema, processId: "da", clock },
      ...{ leaseMs: 900, heartbeatMs: 250, pollMs: 100, dedupeWindowMs: 10_000 },
    });
    open.push(a);
    a.onWake(() => {});
    const stepped = () =>
      eventually("the step to end", () => clock.pendingTimers === 2 && clock.nextTimerAt() !== clock.now());
    const applyAged = async (messageId: string) => {
      await a.accept({ session: "web:d", messageId, mode: "default", body: body(messageId) });
      for (const entry of await a.waiting("web:d")) await a.applied(entry, { disposition: "started" });
      // Applied an hour ago: past the window.
      await db.pool.query(
        `UPDATE ${db.schema}.inbox SET taken_at = taken_at - interval '1 hour' WHERE message_id = $1`,
        [messageId],
      );
    };
    const again = (messageId: string) =>
      a.accept({ session: "web:d", messageId, mode: "default", body: body(messageId) });
    await stepped();
    await clock.advance(100);
    await stepped(); // the first poll pruned (nothing yet)
    await applyAged("m1");
    await clock.advance(100);
    await stepped(); // 100 ms later: no prune, m1 is still known
    expect(await again("m1")).toEqual({ kind: "duplicate" });
    await clock.advance(900);
    await stepped(); // a tenth of the window after the first prune: m1 is gone and may run again
    expect(await again("m1")).toMatchObject({ kind: "local" });
  });

  it("keeps a session whose lease ran out when nobody took it meanwhile (the database was away)", async () => {
    const a = await member("ka");
    const lost: string[] = [];
    a.onLost?.((session) => lost.push(session));
    await a.accept({ session: "web:k", messageId: "m1", mode: "default", body: body("m1") });
    const fence = a.ownershipFence("web:k")!.fence;
    await db.pool.query(
      `UPDATE ${db.schema}.session_owners SET lease_until = clock_timestamp() - interval '1 second'
        WHERE session_key = 'web:k'`,
    );
    // Renewed under the same token by the next heartbeat: still this process's, nothing lost.
    await eventually("the lease renewed", async () => {
      const { rows } = await db.pool.query(
        `SELECT 1 FROM ${db.schema}.session_owners
          WHERE session_key = 'web:k' AND owner = 'ka' AND lease_until > clock_timestamp()`,
      );
      return rows.length === 1;
    });
    expect(lost).toEqual([]);
    expect(a.ownershipFence("web:k")).toEqual({ owner: "ka", fence });
  });
});
