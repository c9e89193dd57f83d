import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { chatGateway } from "../support/chat-gateway.js";

// On a chat channel nobody is left silent: with the default `delivery.visibleAcks: "problems"`, every
// ack of a message that will never be answered and every control command's ack is a visible message;
// acks of messages that will be answered stay quiet. The answer threads under the message it answers.

const loopback = (clock: { now(): number }) => new LoopbackChannel({ now: () => clock.now() });

describe("delivery.visibleAcks: problems (the default on chat channels)", () => {
  it("a 40,000-character message and a /stop each produce a visible message; answered ones stay quiet", async () => {
    const world = chatGateway(loopback, {
      config: { queue: { mode: "followup" } },
      rules: [{ reply: { delayMs: 5000, text: "Re: {{latestUser}}" } }],
    });
    await world.gateway.start();
    const huge = await world.send("m0", "x".repeat(40_000));
    expect(huge.disposition).toBe("rejected");
    expect((await world.send("m1", "first")).disposition).toBe("started");
    expect((await world.send("m2", "second")).disposition).toBe("queued");
    await world.clock.advance(100);
    const stop = await world.send("m3", "/stop");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    const acks = channel.sent.filter((sent) => sent.kind === "ack");
    expect(acks.map((sent) => sent.text)).toEqual([huge.text, stop.text]);
    expect(stop.text).toContain("dropping 1 waiting message");
    expect(acks.map((sent) => sent.deliveryId)).toEqual(["ack:chat:1:m0", "ack:chat:1:m3"]);
  });

  it("`all` sends every ack, `none` (or the old `false`) none; `true` still means all", async () => {
    for (const [setting, count] of [
      ["all", 2],
      ["none", 0],
      [true, 2],
      [false, 0],
    ] as const) {
      const world = chatGateway(loopback, { config: { delivery: { visibleAcks: setting } } });
      await world.gateway.start();
      await world.send("m1", "hello");
      await world.send("m2", "x".repeat(40_000));
      await world.settle();
      const acks = (world.channel as LoopbackChannel).sent.filter((sent) => sent.kind === "ack");
      expect(acks, String(setting)).toHaveLength(count);
    }
  });

  it("ackReactions: answered messages get a reaction instead of a message; problems are still told", async () => {
    const world = chatGateway(
      (clock) => new LoopbackChannel({ now: () => clock.now(), capabilities: { react: true } }),
      { config: { delivery: { ackReactions: true, visibleAcks: "all" } } },
    );
    await world.gateway.start();
    await world.send("m1", "hello", { replyTo: "501" });
    await world.send("m2", "x".repeat(40_000), { replyTo: "502" });
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    expect(channel.reactions.map((each) => [each.messageId, each.reaction])).toEqual([
      ["501", "👀"],
      ["502", "🤷"],
    ]);
    expect(channel.sent.filter((sent) => sent.kind === "ack").map((sent) => sent.replyTo)).toEqual(["502"]);
  });
});

describe("replyTo and thread", () => {
  it("are kept on the user record and handed back on the answer", async () => {
    const world = chatGateway(loopback);
    await world.gateway.start();
    await world.send("m1", "hello", { replyTo: "777", thread: "t-9" });
    await world.settle();
    const reply = (world.channel as LoopbackChannel).sent.find((sent) => sent.kind === "reply");
    expect(reply).toMatchObject({ text: "Re: hello", replyTo: "777", thread: "t-9" });
    const user = (await world.store.readWindow("chat:1")).find((record) => record.role === "user");
    expect(user).toMatchObject({ replyTo: "777", thread: "t-9" });
  });

  it("a malformed replyTo is refused naming the field", async () => {
    const world = chatGateway(loopback);
    await world.gateway.start();
    await expect(world.send("m1", "hi", { replyTo: 5 as unknown as string })).rejects.toThrow(/^replyTo:/);
  });
});
