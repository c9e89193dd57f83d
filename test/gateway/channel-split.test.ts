import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { splitText } from "../../src/policy/split-text.js";
import type { Channel, DeliveryReceipt, OutboundMessage } from "../../src/ports/channel.js";
import { chatGateway } from "../support/chat-gateway.js";

// A text longer than the channel's maxLength goes out in parts, each its own deliveryId (`#1`, `#2`…),
// each with its own durable receipt: a restart sends only the parts the platform does not have.

const LONG_REPLY = [
  "The first paragraph says one thing. It has two sentences.",
  "The second paragraph is here. It goes on a little longer than the first one did.",
  "And a third, short one.",
].join("\n\n");

/** A platform without idempotency keys: every call posts. Part `hangOn` never answers (a crash mid-send). */
class Platform implements Channel {
  readonly maxLength = 60;
  constructor(
    readonly posted: OutboundMessage[],
    private readonly hangOn?: number,
  ) {}
  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    if (message.part?.index === this.hangOn) return new Promise<never>(() => {});
    this.posted.push(message);
    return { messageId: `p${this.posted.length}` };
  }
}

describe("splitText", () => {
  it("cuts at paragraphs, then sentences, then words, each part within the limit", () => {
    expect(splitText("One.\n\nTwo.", 6)).toEqual(["One.", "Two."]);
    expect(splitText("First sentence. Second one here.", 20)).toEqual([
      "First sentence.",
      "Second one here.",
    ]);
    expect(splitText("alpha beta gamma delta", 11)).toEqual(["alpha beta", "gamma delta"]);
    expect(splitText("abcdefghij", 4)).toEqual(["abcd", "efgh", "ij"]);
    const parts = splitText(LONG_REPLY, 60);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(60);
    expect(parts.join(" ").replace(/\s+/g, "")).toBe(LONG_REPLY.replace(/\s+/g, ""));
  });
});

describe("a reply longer than the channel's maxLength", () => {
  it("goes out in parts under <deliveryId>#1, #2, … and counts as one delivered reply", async () => {
    const world = chatGateway((clock) => new LoopbackChannel({ now: () => clock.now(), maxLength: 60 }), {
      rules: [{ reply: { delayMs: 100, text: LONG_REPLY } }],
    });
    await world.gateway.start();
    await world.send("m1", "tell me");
    await world.settle();
    const replies = (world.channel as LoopbackChannel).sent.filter((sent) => sent.kind === "reply");
    expect(replies.map((sent) => sent.text)).toEqual(splitText(LONG_REPLY, 60));
    const id = (world.ofType("final.delivered")[0] as { deliveryId?: string } | undefined)?.deliveryId;
    expect(replies.map((sent) => sent.deliveryId)).toEqual(replies.map((_, index) => `${id}#${index + 1}`));
    expect(replies.map((sent) => sent.part)).toEqual(
      replies.map((_, index) => ({ index: index + 1, count: replies.length })),
    );
  });

  it("after a kill mid-send, the restart sends only the parts the platform never got", async () => {
    const store = new MemoryStore();
    const posted: OutboundMessage[] = [];
    const rules = [{ reply: { delayMs: 100, text: LONG_REPLY } }];
    const first = chatGateway(() => new Platform(posted, 2), { store, rules });
    await first.gateway.start();
    await first.send("m1", "tell me");
    await first.clock.advance(500);
    expect(posted.map((message) => message.part?.index)).toEqual([1]);

    // kill -9: the first process is never advanced again; a second one starts on the same store.
    const second = chatGateway(() => new Platform(posted), { store, rules });
    await second.gateway.start();
    await second.settle();
    const parts = splitText(LONG_REPLY, 60);
    expect(posted.map((message) => message.text)).toEqual(parts);
    expect(new Set(posted.map((message) => message.deliveryId)).size).toBe(parts.length);
    expect(second.ofType("model.called")).toEqual([]);
    expect(second.ofType("final.delivered")).toEqual([expect.objectContaining({ resent: true })]);

    // A third start finds every receipt: nothing more is posted.
    const third = chatGateway(() => new Platform(posted), { store, rules });
    await third.gateway.start();
    await third.settle();
    expect(posted).toHaveLength(parts.length);
  });
});
