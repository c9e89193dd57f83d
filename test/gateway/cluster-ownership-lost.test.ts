import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { InboxEntry, SessionCluster } from "../../src/ports/session-cluster.js";

// A process of a cluster loses a session's ownership mid-turn (its lease ran out while the database
// was away) and stops the session's live state, the queue with it. The database still names it the
// owner, so it is the one that applies the session's next message: it must take the turn and queue
// from the store first. Else the message starts a blank session, whose save overwrites the stored
// queue, and the messages acked `started` and `queued` are never answered. Simulated clock.

interface Row extends InboxEntry {
  ack?: object;
}

/** The cluster as one process sees it: it owns every session (by the store's account). */
function ownedCluster() {
  const rows: Row[] = [];
  let wake: (session: string, adopted: boolean) => void = () => {};
  let lose: (session: string) => void = () => {};
  const cluster: SessionCluster = {
    processId: "here",
    ackWaitMs: 50,
    async accept(message) {
      if (rows.some((r) => r.session === message.session && r.messageId === message.messageId))
        return { kind: "duplicate" };
      const row: Row = { ...message, id: String(rows.length + 1), receivedBy: "here" };
      rows.push(row);
      // Taken (adopted) with the first message; owned since, by the store's account.
      return { kind: "local", id: row.id, adopted: rows.length === 1 };
    },
    async waiting(session) {
      return rows.filter((r) => r.session === session && !r.ack);
    },
    async applied(entry, ack) {
      rows.find((r) => r.id === entry.id)!.ack = ack;
    },
    async forget(id) {
      rows.splice(
        rows.findIndex((r) => r.id === id),
        1,
      );
    },
    async awaitAck(id) {
      const ack = rows.find((r) => r.id === id)?.ack as Record<string, unknown> | undefined;
      return ack ? { ack, by: "here" } : undefined;
    },
    // Kept: by the store's account this process stays the owner through the test.
    release: async () => false,
    owners: async () => new Map(),
    onWake(listener) {
      wake = listener;
      return () => {};
    },
    onLost(listener) {
      lose = listener;
      return () => {};
    },
  };
  /** A message another process received for the session, stored in the inbox for its owner. */
  const forwarded = (session: string, id: string, text: string) =>
    rows.push({
      session,
      messageId: id,
      mode: "followup",
      body: { session, channel: "web", id, text, mode: "followup" },
      id: String(rows.length + 1),
      receivedBy: "there",
    });
  return { cluster, rows, forwarded, wake: (s: string) => wake(s, false), lose: (s: string) => lose(s) };
}

function processOf(cluster: SessionCluster) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const events: TillerEvent[] = [];
  const gateway = createGateway({
    config: {},
    model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
    tools: [],
    channels: { web: channel },
    clock,
    store: new MemoryStore(),
    cluster,
    logger: silentLogger,
  });
  gateway.subscribe((event) => {
    events.push(event);
  });
  const settle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const send = (id: string, text: string) =>
    gateway.receive({ session: "web:1", channel: "web", id, text, mode: "followup" });
  const replies = () => channel.sent.filter((s) => s.ok).map((s) => s.text);
  return { gateway, clock, events, settle, send, replies };
}

describe("a cluster session whose ownership was lost mid-turn", () => {
  it("takes its turn and queue from the store before it applies the next message woken here: every acked message is answered once", async () => {
    const c = ownedCluster();
    const p = processOf(c.cluster);
    await p.gateway.start();
    expect((await p.send("m1", "first")).disposition).toBe("started");
    expect((await p.send("m2", "second")).disposition).toBe("queued");
    // Mid-turn: the lease ran out (the database was away), the live state goes.
    await p.clock.advance(50);
    c.lose("web:1");
    await p.clock.advance(0);
    expect(p.events.map((e) => e.type)).toContain("session.lost");
    // The next message for the session reaches this process, still the owner by the store's account.
    c.forwarded("web:1", "m3", "third");
    c.wake("web:1");
    await p.settle();
    const replies = p.replies();
    for (const text of ["Re: first", "Re: second", "Re: third"])
      expect(replies.filter((r) => r === text)).toHaveLength(1);
  });

  it("takes them from the store before it applies a message it receives itself, still the owner by the store's account", async () => {
    const c = ownedCluster();
    const p = processOf(c.cluster);
    await p.gateway.start();
    await p.send("m1", "first");
    await p.send("m2", "second");
    await p.clock.advance(50);
    c.lose("web:1");
    await p.clock.advance(0);
    // Taken back by this process meanwhile (its poll found the session without a live owner): the
    // acceptance says nothing changed hands.
    expect((await p.send("m3", "third")).disposition).not.toBe("duplicate");
    await p.settle();
    const replies = p.replies();
    for (const text of ["Re: first", "Re: second", "Re: third"])
      expect(replies.filter((r) => r === text)).toHaveLength(1);
  });
});
