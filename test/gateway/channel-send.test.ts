import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ChannelSendError } from "../../src/errors.js";
import { COULD_NOT_DELIVER_NOTICE, UNCERTAIN_DELIVERY_NOTICE } from "../../src/policy/delivery.js";
import { chatGateway, SlowPlatform } from "../support/chat-gateway.js";

// The channel edge keeps the exactly-once promise: a slow send is waited for, a transient refusal is
// retried once after the time the platform asked for, a permanent one never, and a send whose outcome
// is unknown is resent only when the channel can say it did not arrive.

const quiet = { delivery: { visibleAcks: "none" as const, sendTimeoutMs: 1000 } };

describe("a send slower than delivery.sendTimeoutMs", () => {
  it("is aborted, waited for, and counted as delivered: the user sees the reply once", async () => {
    const world = chatGateway((clock) => new SlowPlatform(clock, 2500), { config: quiet });
    await world.gateway.start();
    await world.send("m1", "hello");
    await world.settle();
    const platform = world.channel as SlowPlatform;
    expect(platform.posted.map((message) => message.text)).toEqual(["Re: hello"]);
    expect(platform.signals[0]?.aborted).toBe(true);
    expect(world.ofType("delivery.late")).toHaveLength(1);
    expect(world.ofType("final.delivered")).toHaveLength(1);
    expect(world.ofType("recovery.queued")).toEqual([]);
    const finals = (await world.store.readWindow("chat:1")).filter((record) => record.role === "assistant");
    expect(finals).toEqual([expect.objectContaining({ text: "Re: hello", delivered: true })]);
  });
});

describe("a channel error that says what became of the send", () => {
  it("retryAfterMs: waits that long on the clock, tries once more under the same deliveryId", async () => {
    let sentAt: number[] = [];
    const world = chatGateway(
      (clock) => {
        const channel = new LoopbackChannel({
          now: () => clock.now(),
          faults: [{ error: new ChannelSendError("429 Too Many Requests", { retryAfterMs: 3000 }) }],
        });
        return channel;
      },
      { config: quiet },
    );
    await world.gateway.start();
    await world.send("m1", "hello");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    sentAt = channel.sent.map((sent) => sent.at);
    expect(channel.sent.map((sent) => [sent.ok, sent.deliveryId])).toEqual([
      [false, channel.sent[0]?.deliveryId],
      [true, channel.sent[0]?.deliveryId],
    ]);
    expect(sentAt[1]! - sentAt[0]!).toBe(3000);
    expect(world.ofType("delivery.retried")).toEqual([expect.objectContaining({ afterMs: 3000 })]);
    expect(world.ofType("final.delivered")).toHaveLength(1);
  });

  it("permanent: never retried, and the user gets the could-not-deliver notice", async () => {
    const world = chatGateway(
      (clock) =>
        new LoopbackChannel({
          now: () => clock.now(),
          faults: [
            { error: new ChannelSendError("400 Bad Request: message is too long", { permanent: true }) },
          ],
        }),
      { config: quiet },
    );
    await world.gateway.start();
    await world.send("m1", "hello");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    expect(channel.sent.map((sent) => [sent.kind, sent.ok, sent.text])).toEqual([
      ["reply", false, "Re: hello"],
      ["notice", true, COULD_NOT_DELIVER_NOTICE],
    ]);
    expect(world.ofType("recovery.queued")).toEqual([]);
    expect(world.ofType("delivery.failed")).toEqual([expect.objectContaining({ outcome: "permanent" })]);
  });

  it("unknown outcome without reconcile: no resend, the user is told it may not have arrived", async () => {
    const world = chatGateway(
      (clock) =>
        new LoopbackChannel({
          now: () => clock.now(),
          faults: [
            { error: new ChannelSendError("connection reset", { outcome: "unknown" }), deliver: true },
          ],
        }),
      { config: quiet },
    );
    await world.gateway.start();
    await world.send("m1", "hello");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    expect(channel.sent.map((sent) => [sent.kind, sent.text])).toEqual([
      ["reply", "Re: hello"],
      ["notice", UNCERTAIN_DELIVERY_NOTICE],
    ]);
    expect(channel.duplicates).toEqual([]);
    expect(world.ofType("recovery.queued")).toEqual([]);
  });

  it("unknown outcome with reconcile answering delivered: counted as delivered, nothing resent", async () => {
    const world = chatGateway(
      (clock) =>
        new LoopbackChannel({
          now: () => clock.now(),
          capabilities: { reconcile: true },
          faults: [
            { error: new ChannelSendError("connection reset", { outcome: "unknown" }), deliver: true },
          ],
        }),
      { config: quiet },
    );
    await world.gateway.start();
    await world.send("m1", "hello");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);
    expect(channel.duplicates).toEqual([]);
    expect(world.ofType("delivery.reconciled")).toEqual([expect.objectContaining({ answer: "delivered" })]);
    expect(world.ofType("final.delivered")).toHaveLength(1);
  });

  it("unknown outcome with reconcile answering not delivered: resent once under the same deliveryId", async () => {
    const world = chatGateway(
      (clock) =>
        new LoopbackChannel({
          now: () => clock.now(),
          capabilities: { reconcile: true },
          faults: [{ error: new ChannelSendError("aborted mid-request", { outcome: "unknown" }) }],
        }),
      { config: quiet },
    );
    await world.gateway.start();
    await world.send("m1", "hello");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    expect(channel.sent.map((sent) => [sent.ok, sent.text])).toEqual([
      [false, "Re: hello"],
      [true, "Re: hello"],
    ]);
    expect(channel.sent[1]?.deliveryId).toBe(channel.sent[0]?.deliveryId);
    expect(world.ofType("delivery.reconciled")).toEqual([
      expect.objectContaining({ answer: "not-delivered" }),
    ]);
    expect(world.ofType("final.delivered")).toHaveLength(1);
  });
});
