import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { gatewayOn } from "../support/gateway-on.js";

// Gateways that share a store check each message id there before the session sees it (the shared
// dedupe). A gateway author who calls receive() for a session's messages one after another, without
// waiting for each ack, expects them answered in that order, however long each check takes.

/** A shared store whose id checks answer in reverse order: the first one asked is the slowest. */
class SlowFirstStore extends MemoryStore {
  private readonly seen = new Set<string>();
  private asked = 0;
  async claimMessageId(session: string, messageId: string): Promise<boolean> {
    const turns = 40 - 10 * this.asked++;
    for (let i = 0; i < turns; i++) await Promise.resolve();
    const key = `${session}\u0000${messageId}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }
  async releaseMessageId(session: string, messageId: string): Promise<void> {
    this.seen.delete(`${session}\u0000${messageId}`);
  }
}

describe("receive() on a shared store", () => {
  it("hands a session its messages in the order they were received, whichever id check is quicker", async () => {
    const proc = gatewayOn(new SlowFirstStore(), { config: { queue: { mode: "followup" } } });
    await proc.gateway.start();
    const acks = await Promise.all([0, 1, 2, 3].map((n) => proc.send(`m${n}`, `q${n}`)));
    expect(acks.map((ack) => ack.disposition)).toEqual(["started", "queued", "queued", "queued"]);
    await proc.settle();
    const replies = proc.channel.sent.filter((m) => m.kind === "reply").map((m) => m.text);
    expect(replies).toEqual(["Re: q0", "Re: q1", "Re: q2", "Re: q3"]);
    await proc.gateway.stop();
  });
});
