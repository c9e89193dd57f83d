import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { DELIVERY_INTENT } from "../../src/ports/store.js";
import { gatewayOn, HangingChannel } from "../support/gateway-on.js";

// Exactly once across crashes: a durable intent before each send, its receipt after, and a restart that
// resends an intent without a receipt once, under the same deliveryId, without running the turn again.

/** A store whose state saves can be made to hang, as a process killed mid-write leaves them. */
class HangingStateStore extends MemoryStore {
  hang = false;
  override async saveState(session: string, state: unknown): Promise<void> {
    if (this.hang) return new Promise<void>(() => {});
    return super.saveState(session, state);
  }
}

describe("a crash while a reply is on its way", () => {
  it("resends the stored final once under the same deliveryId and never calls the model again", async () => {
    const store = new MemoryStore();
    const hanging = new HangingChannel();
    const first = gatewayOn(store, { channel: hanging });
    await first.gateway.start();
    expect((await first.send("m1", "hello")).disposition).toBe("started");
    await first.clock.advance(200);
    expect(hanging.sent).toHaveLength(1);
    const intent = (await store.readWindow("web:1")).find(
      (record) => record.role === "custom" && record.customType === DELIVERY_INTENT,
    );
    // Named after the message it answers, as its intent records: any later send of it is the same one.
    expect(intent).toMatchObject({ details: { deliveryId: "reply:web:1:m1" } });
    expect(hanging.sent[0]!.deliveryId).toBe("reply:web:1:m1");

    const second = gatewayOn(store);
    await second.gateway.start();
    await second.settle();
    expect(second.events.filter((event) => event.type === "model.called")).toEqual([]);
    expect(second.channel.sent.map((sent) => [sent.kind, sent.text, sent.deliveryId])).toEqual([
      ["reply", "Re: hello", hanging.sent[0]!.deliveryId],
    ]);
    const records = await store.readWindow("web:1");
    expect(records.filter((record) => record.role === "assistant")).toEqual([
      expect.objectContaining({
        text: "Re: hello",
        delivered: true,
        deliveryId: hanging.sent[0]!.deliveryId,
      }),
    ]);
    expect(await store.loadState("web:1")).toBeNull();

    // A third start finds the receipt: nothing is sent again.
    const third = gatewayOn(store);
    await third.gateway.start();
    await third.settle();
    expect(third.channel.sent).toEqual([]);
  });

  it("a channel that already took the text drops the resend: the user sees the reply once", async () => {
    const store = new MemoryStore();
    const user = new LoopbackChannel();
    const first = gatewayOn(store, { channel: new HangingChannel(user) });
    await first.gateway.start();
    await first.send("m1", "hello");
    await first.clock.advance(200);
    expect(user.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);

    const second = gatewayOn(store, { channel: user });
    await second.gateway.start();
    await second.settle();
    expect(user.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);
    expect(user.duplicates.map((sent) => sent.deliveryId)).toEqual([user.sent[0]!.deliveryId]);
    // The first receipt comes back for the duplicate: the final counts as delivered.
    const finals = (await store.readWindow("web:1")).filter((record) => record.role === "assistant");
    expect(finals).toEqual([expect.objectContaining({ delivered: true, deliveryMessageId: "out-1" })]);
  });
});

describe("a message stored before its state is saved", () => {
  it("is not stored while no saved state covers it, so the client's retry after a restart is answered", async () => {
    const store = new HangingStateStore();
    const first = gatewayOn(store);
    await first.gateway.start();
    store.hang = true;
    let acked = false;
    void first.send("m1", "hello").then(() => {
      acked = true;
    });
    await first.clock.advance(500);
    expect(acked).toBe(false);
    // Its turn started, but the message waits for a durable state before it is written.
    expect((await store.read("web:1")).filter((record) => record.role === "user")).toEqual([]);

    store.hang = false;
    const second = gatewayOn(store);
    await second.gateway.start();
    const retry = await second.send("m1", "hello");
    expect(retry.disposition).toBe("started");
    await second.settle();
    expect(second.channel.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);
  });
});

describe("state saves that fail", () => {
  it("are retried before the ack: a save that fails twice then works still acks started", async () => {
    class FlakyStore extends MemoryStore {
      failures = 2;
      override async saveState(session: string, state: unknown): Promise<void> {
        if (this.failures-- > 0)
          throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
        return super.saveState(session, state);
      }
    }
    const store = new FlakyStore();
    const { gateway, settle, send, events, channel } = gatewayOn(store);
    await gateway.start();
    const acking = send("m1", "hello");
    await settle();
    const ack = await acking;
    expect(ack.disposition).toBe("started");
    expect(ack.durable).toBeUndefined();
    expect(events.filter((event) => event.type === "state.saveRetried")).toHaveLength(2);
    expect(events.filter((event) => event.type === "state.saveFailed")).toEqual([]);
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);
  });

  it("that keep failing are acked as not durable, never as a plain started", async () => {
    class BrokenStore extends MemoryStore {
      override async saveState(): Promise<void> {
        throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
      }
    }
    const { gateway, settle, send } = gatewayOn(new BrokenStore());
    await gateway.start();
    const acking = send("m1", "hello");
    await settle();
    const ack = await acking;
    expect(ack.durable).toBe(false);
    expect(ack.text).toContain("could not be stored safely");
  });
});
