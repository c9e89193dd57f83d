import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import type { TillerEvent } from "../../src/events.js";
import { createClusterInbox } from "../../src/gateway/inbound/cluster-inbox.js";
import type { Ack } from "../../src/gateway/inbound/compose-ack.js";
import { triggerAckOf } from "../../src/gateway/inbound/trigger.js";
import type { InboundMessage } from "../../src/gateway/inbound/validate-inbound.js";
import { silentLogger } from "../../src/logger.js";
import type { Acceptance, InboxEntry, SessionCluster } from "../../src/ports/session-cluster.js";

// The cluster receive path against an in-memory cluster: what the ack says when the message is
// applied here, by another live owner, or by nobody in time; the real database is covered by the
// PostgreSQL suites.

interface Row extends InboxEntry {
  ack?: object;
}

/** Resolves after `n` turns of the microtask queue. */
async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

function memoryCluster(
  owner: string | undefined,
  ownerAnswers?: (entry: Row) => object,
  /** Microtask turns before a message's row is stored (a transaction that takes longer). */
  acceptDelay: (messageId: string) => number = () => 0,
) {
  const rows: Row[] = [];
  const calls: string[] = [];
  const cluster: SessionCluster = {
    processId: "here",
    ackWaitMs: 50,
    async accept(message): Promise<Acceptance> {
      await ticks(acceptDelay(message.messageId));
      if (rows.some((r) => r.session === message.session && r.messageId === message.messageId))
        return { kind: "duplicate" };
      const row: Row = { ...message, id: String(rows.length + 1), receivedBy: "here" };
      rows.push(row);
      if (owner) {
        if (ownerAnswers) row.ack = ownerAnswers(row);
        return { kind: "remote", id: row.id, owner };
      }
      return { kind: "local", id: row.id, adopted: true };
    },
    async waiting(session) {
      return rows.filter((r) => r.session === session && !r.ack);
    },
    async applied(entry, ack) {
      const row = rows.find((r) => r.id === entry.id)!;
      row.ack = ack;
    },
    async forget(id) {
      calls.push(`forget ${id}`);
      rows.splice(
        rows.findIndex((r) => r.id === id),
        1,
      );
    },
    async awaitAck(id) {
      const ack = rows.find((r) => r.id === id)?.ack as Record<string, unknown> | undefined;
      return ack ? { ack, by: owner ?? "here" } : undefined;
    },
    async release(session) {
      calls.push(`release ${session}`);
      return true;
    },
    async owners() {
      return new Map();
    },
    onWake: () => () => {},
    onLost(listener) {
      loseOwnership = listener;
      return () => {};
    },
  };
  let loseOwnership: (session: string) => void = () => {};
  return { cluster, rows, calls, lose: (session: string) => loseOwnership(session) };
}

function inboxWith(
  cluster: SessionCluster,
  local: (m: InboundMessage, arrivedAt?: number) => Ack,
  calls: string[] = [],
  draining = false,
  now = () => 0,
) {
  const events: TillerEvent[] = [];
  const inbox = createClusterInbox({
    cluster,
    config: parseConfig({}),
    channelNames: ["web"],
    async local(message, arrivedAt) {
      calls.push(`apply ${message.id}`);
      return local(message, arrivedAt);
    },
    async localTrigger(request) {
      calls.push(`trigger ${request.id}`);
      return { ...triggerAckOf(request, request.id ?? "", "started"), text: "Started." };
    },
    async adopt(session) {
      calls.push(`adopt ${session}`);
    },
    isIdle: () => true,
    settle: async () => {},
    forgetLive(session) {
      calls.push(`forget live ${session}`);
    },
    isDraining: () => draining,
    now,
    emit: (type, fields) => events.push({ type, at: 0, ...fields } as unknown as TillerEvent),
    logger: silentLogger,
  });
  return { inbox, events };
}

const message = { session: "web:1", channel: "web", text: "hello", id: "m1" };
const started = (m: InboundMessage): Ack => ({
  session: m.session,
  messageId: m.id,
  disposition: "started",
  mode: "steer",
  modeSource: "default",
  text: "Got it, working on it.",
});

describe("cluster inbox", () => {
  it("applies a message here when nobody owns the session: adopt first, then apply, then give up when idle", async () => {
    const { cluster, calls } = memoryCluster(undefined);
    const { inbox } = inboxWith(cluster, started, calls);
    expect((await inbox.receive(message)).disposition).toBe("started");
    expect(calls).toEqual(["adopt web:1", "apply m1", "release web:1"]);
    // The same id again, at any process: a duplicate, not applied again.
    expect((await inbox.receive(message)).disposition).toBe("duplicate");
    expect(calls.filter((c) => c.startsWith("apply"))).toHaveLength(1);
  });

  it("stores a session's messages in the order they were received, whichever store call is quicker", async () => {
    // Each message's transaction is slower than the next one's: stored as they finish, they would be
    // in reverse order.
    const { cluster, rows, calls } = memoryCluster(
      undefined,
      undefined,
      (id) => 40 - 10 * Number(id.slice(1)),
    );
    const { inbox } = inboxWith(cluster, started, calls);
    const ids = ["m0", "m1", "m2", "m3"];
    await Promise.all(ids.map((id) => inbox.receive({ ...message, id, text: `q ${id}` })));
    expect(rows.map((row) => row.messageId)).toEqual(ids);
    expect(calls.filter((c) => c.startsWith("apply"))).toEqual(ids.map((id) => `apply ${id}`));
  });

  it("returns the owner's ack, naming the owner, when it answers in time", async () => {
    const { cluster } = memoryCluster("there", (row) => ({
      ...started(row.body as never),
      disposition: "steered",
    }));
    const { inbox, events } = inboxWith(cluster, started);
    const ack = await inbox.receive(message);
    expect(ack).toMatchObject({ disposition: "steered", owner: "there" });
    // The owner is a field for clients; the text a person reads names no process.
    expect(ack.text).not.toContain("there");
    expect(ack.text).toBe(started(message as never).text);
    expect(events.find((e) => e.type === "message.forwarded")).toMatchObject({
      owner: "there",
      confirmed: true,
    });
  });

  it("hands the owner the time a forwarded message arrived here, not the time the owner applies it", async () => {
    const forwarding = memoryCluster("there");
    const { inbox: receiver } = inboxWith(forwarding.cluster, started, [], false, () => 1000);
    await receiver.receive(message);
    // The owner (later, on its own clock) applies the row from the inbox.
    const owning = memoryCluster(undefined);
    owning.rows.push(...forwarding.rows);
    const applied: Array<[string, number | undefined]> = [];
    const handed: InboundMessage[] = [];
    const record = (m: InboundMessage, arrivedAt?: number) => {
      applied.push([m.id, arrivedAt]);
      handed.push(m);
      return started(m);
    };
    const { inbox: owner } = inboxWith(owning.cluster, record, [], false, () => 5000);
    await owner.receive({ ...message, id: "m2", text: "later" });
    expect(applied).toEqual([
      ["m1", 1000],
      ["m2", 5000],
    ]);
    // The message the owner hands its session is the one received, without the inbox's field.
    expect(handed[0]).toEqual(message);
  });

  it("says the message is stored for the session when the owner does not confirm in time", async () => {
    const { cluster, rows } = memoryCluster("there");
    const { inbox, events } = inboxWith(cluster, started);
    const ack = await inbox.receive(message);
    expect(ack).toMatchObject({ disposition: "queued", owner: "there", waitsFor: "own-turn" });
    expect(ack.text).toMatch(/^Stored/);
    expect(ack.text).not.toContain("there");
    expect(rows).toHaveLength(1);
    expect(events.find((e) => e.type === "message.forwarded")).toMatchObject({ confirmed: false });
  });

  it("takes a message the session rejected out of the inbox, so it may be sent again", async () => {
    const { cluster, rows, calls } = memoryCluster(undefined);
    const { inbox } = inboxWith(
      cluster,
      (m) => ({ ...started(m), disposition: "rejected", text: "Not accepted: full." }),
      calls,
    );
    expect((await inbox.receive(message)).disposition).toBe("rejected");
    expect(rows).toHaveLength(0);
    expect(calls).toContain("forget 1");
  });

  it("stops the session's live state here when its ownership was lost", async () => {
    const { cluster, calls, lose } = memoryCluster(undefined);
    const { inbox, events } = inboxWith(cluster, started, calls);
    inbox.start();
    lose("web:1");
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(["forget live web:1"]);
    expect(events.map((e) => e.type)).toEqual(["session.lost"]);
  });

  it("leaves a draining process's answer to the one-process path: nothing reaches the inbox", async () => {
    const { cluster, rows, calls } = memoryCluster(undefined);
    const refused = (m: InboundMessage): Ack => ({
      ...started(m),
      disposition: "rejected",
      text: "draining",
    });
    const { inbox } = inboxWith(cluster, refused, calls, true);
    expect((await inbox.receive(message)).disposition).toBe("rejected");
    expect(rows).toHaveLength(0);
    expect(calls).toEqual(["apply m1"]);
  });

  it("refuses a malformed message before anything reaches the inbox", async () => {
    const { cluster, rows } = memoryCluster(undefined);
    const { inbox } = inboxWith(cluster, started);
    await expect(inbox.receive({ ...message, channel: "nope" })).rejects.toMatchObject({
      name: expect.any(String),
    });
    expect(rows).toHaveLength(0);
  });

  it("runs a turn nobody typed where the session is owned, once per id whichever process fires it", async () => {
    const { cluster, calls, rows } = memoryCluster(undefined);
    const { inbox } = inboxWith(cluster, started, calls);
    const slot = { session: "web:1", trigger: "cron" as const, text: "the digest", id: "schedule:d:1" };
    expect(await inbox.trigger(slot)).toMatchObject({ disposition: "started", lane: "cron" });
    expect(calls).toEqual(["adopt web:1", "trigger schedule:d:1", "release web:1"]);
    expect(rows.map((row) => row.mode)).toEqual(["trigger"]);
    // Another process firing the same slot: stored once, so a duplicate, not run again.
    expect(await inbox.trigger(slot)).toMatchObject({ disposition: "duplicate", trigger: "cron" });
    expect(calls.filter((c) => c.startsWith("trigger"))).toHaveLength(1);
  });

  it("hands a triggered turn to the session's owner and returns its ack, or says it is stored", async () => {
    const slot = { session: "web:1", trigger: "manual" as const, text: "sweep", id: "t1" };
    const answered = memoryCluster("there", (row) => ({
      ...triggerAckOf(row.body as never, row.messageId, "queued"),
      text: "Queued behind the running turn.",
    }));
    const { inbox, events } = inboxWith(answered.cluster, started);
    expect(await inbox.trigger(slot)).toMatchObject({ disposition: "queued", lane: "main" });
    expect(events.find((e) => e.type === "message.forwarded")).toMatchObject({ owner: "there" });

    const silent = memoryCluster("there");
    const { inbox: other } = inboxWith(silent.cluster, started);
    const ack = await other.trigger(slot);
    expect(ack).toMatchObject({ disposition: "queued" });
    expect(ack.text).toContain("process there");
  });

  it("refuses a malformed trigger before anything reaches the inbox", async () => {
    const { cluster, rows } = memoryCluster(undefined);
    const { inbox } = inboxWith(cluster, started);
    await expect(
      inbox.trigger({ session: "web:1", trigger: "user" as never, text: "x" }),
    ).rejects.toMatchObject({ field: "trigger" });
    expect(rows).toHaveLength(0);
  });
});
