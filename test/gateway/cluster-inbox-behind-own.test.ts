import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { createClusterInbox } from "../../src/gateway/inbound/cluster-inbox.js";
import type { Ack } from "../../src/gateway/inbound/compose-ack.js";
import { triggerAckOf } from "../../src/gateway/inbound/trigger.js";
import type { InboundMessage } from "../../src/gateway/inbound/validate-inbound.js";
import { silentLogger } from "../../src/logger.js";
import type { Acceptance, InboxEntry, SessionCluster } from "../../src/ports/session-cluster.js";

// A message accepted while the session's older messages still wait in the inbox is applied as
// accepted, without reading the inbox back, only when every one of those is this process's own and
// applied by its own step first; behind another process's message, or behind a step that failed, it
// is read back with them, in order.

interface Row extends InboxEntry {
  ack?: object;
}

const ticks = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

function owningCluster(
  rows: Row[],
  calls: string[],
  wakes: Array<(session: string, adopted: boolean, polled?: boolean) => void> = [],
): SessionCluster {
  return {
    processId: "here",
    ackWaitMs: 60_000,
    async accept(message): Promise<Acceptance> {
      await ticks(2);
      const older = rows.filter((r) => r.session === message.session && !r.ack).map((r) => r.id);
      const row: Row = { ...message, id: String(rows.length + 1), receivedBy: "here" };
      rows.push(row);
      return older.length === 0
        ? { kind: "local", id: row.id, adopted: false, alone: true }
        : { kind: "local", id: row.id, adopted: false, older };
    },
    async waiting(session) {
      calls.push("read");
      return rows.filter((r) => r.session === session && !r.ack);
    },
    async applied(entry, ack) {
      rows.find((r) => r.id === entry.id)!.ack = ack;
    },
    async forget() {},
    async awaitAck(id) {
      const ack = rows.find((r) => r.id === id)?.ack as Record<string, unknown> | undefined;
      return ack ? { ack, by: "here" } : undefined;
    },
    async release() {
      return false;
    },
    async owners() {
      return new Map();
    },
    onWake(listener) {
      wakes.push(listener);
      return () => {};
    },
  };
}

/** An inbox whose local apply waits for `gate` and fails the message ids in `failOnce` once. */
function inbox(cluster: SessionCluster, calls: string[], gate: Promise<void>, failOnce = new Set<string>()) {
  return createClusterInbox({
    cluster,
    config: parseConfig({}),
    channelNames: ["web"],
    async local(m: InboundMessage): Promise<Ack> {
      await gate;
      if (failOnce.delete(m.id)) {
        calls.push(`fail ${m.id}`);
        throw new Error("the store is away");
      }
      calls.push(`apply ${m.id}`);
      return {
        session: m.session,
        messageId: m.id,
        disposition: "started",
        mode: "followup",
        modeSource: "default",
        text: "Started.",
      };
    },
    async localTrigger(request) {
      return { ...triggerAckOf(request, request.id ?? "", "started"), text: "Started." };
    },
    async adopt() {},
    isIdle: () => false,
    settle: async () => {},
    forgetLive() {},
    isDraining: () => false,
    now: () => 0,
    emit: () => {},
    logger: silentLogger,
  });
}

const say = (id: string) => ({ session: "web:1", channel: "web", text: id, id, mode: "followup" });

function gated() {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  return { gate, open };
}

describe("cluster inbox: a message accepted behind the session's waiting ones", () => {
  it("is applied as accepted, without reading the inbox back, behind this process's own messages", async () => {
    const rows: Row[] = [];
    const calls: string[] = [];
    const { gate, open } = gated();
    const box = inbox(owningCluster(rows, calls), calls, gate);
    const acks = Promise.all(["m1", "m2", "m3"].map((id) => box.receive(say(id))));
    // Every accept is in before the first apply ends: m2 and m3 were accepted behind waiting rows.
    await ticks(50);
    expect(rows.map((r) => r.id)).toEqual(["1", "2", "3"]);
    open();
    expect((await acks).map((ack) => ack.disposition)).toEqual(["started", "started", "started"]);
    expect(calls).toEqual(["apply m1", "apply m2", "apply m3"]);
  });

  it("leaves a session alone when the poll finds only rows being applied here, not when told", async () => {
    const rows: Row[] = [];
    const calls: string[] = [];
    const wakes: Array<(session: string, adopted: boolean, polled?: boolean) => void> = [];
    const { gate, open } = gated();
    const box = inbox(owningCluster(rows, calls, wakes), calls, gate);
    box.start();
    const ack = box.receive(say("m1"));
    await ticks(20);
    // m1 is being applied: the poll's find of its row is not read back.
    for (const wake of wakes) wake("web:1", false, true);
    open();
    expect((await ack).disposition).toBe("started");
    await ticks(20);
    expect(calls).toEqual(["apply m1"]);
    // A wake-up another process sent is followed as before.
    for (const wake of wakes) wake("web:1", false);
    await ticks(20);
    expect(calls).toEqual(["apply m1", "read"]);
    box.stop();
  });

  it("is read back with another process's message that waits before it, and applied after it", async () => {
    const rows: Row[] = [
      { id: "1", session: "web:1", messageId: "f1", mode: "followup", body: say("f1"), receivedBy: "there" },
    ];
    const calls: string[] = [];
    const { gate, open } = gated();
    const box = inbox(owningCluster(rows, calls), calls, gate);
    const ack = box.receive(say("m2"));
    open();
    expect((await ack).disposition).toBe("started");
    expect(calls).toEqual(["read", "apply f1", "apply m2"]);
  });

  it("is read back behind an own message whose step failed, which is then applied first", async () => {
    const rows: Row[] = [];
    const calls: string[] = [];
    const { gate, open } = gated();
    const box = inbox(owningCluster(rows, calls), calls, gate, new Set(["m1"]));
    const first = box.receive(say("m1"));
    const second = box.receive(say("m2"));
    await ticks(50);
    open();
    await expect(first).rejects.toThrow("the store is away");
    expect((await second).disposition).toBe("started");
    expect(calls).toEqual(["fail m1", "read", "apply m1", "apply m2"]);
  });
});
