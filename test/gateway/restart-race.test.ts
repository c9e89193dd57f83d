import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";

// A turn of a live session starts, and stores its messages, in the same step as its lane grant; the
// saved state that says the turn left the queue is written a moment later. A crash in between leaves
// a state whose queue still holds a message the transcript already has. The restarted gateway must
// store and answer that message once (found by the kill -9 test; here on purpose, deterministically).

/** A store whose state saves can be held (never complete), as a crash before the write would leave them. */
class HeldStateStore extends MemoryStore {
  holdStates = false;

  override async saveState(session: string, state: unknown): Promise<void> {
    if (this.holdStates) return new Promise<void>(() => {});
    return super.saveState(session, state);
  }
}

function gatewayOn(store: MemoryStore) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    config: { queue: { mode: "followup" } },
    model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
    channels: { web: channel },
    clock,
    store,
    logger: silentLogger,
  });
  return { gateway, clock, channel };
}

describe("a crash between a turn's first write and its saved start", () => {
  it("answers the queued message the transcript already holds once after the restart", async () => {
    const store = new HeldStateStore();
    const first = gatewayOn(store);
    await first.gateway.start();
    await first.gateway.receive({ session: "web:1", channel: "web", id: "k1", text: "first question" });
    const queued = await first.gateway.receive({
      session: "web:1",
      channel: "web",
      id: "k2",
      text: "second question",
    });
    expect(queued.disposition).toBe("queued");
    // From now on no state save completes: k1's turn ends, k2's turn starts and stores k2, then the
    // process dies mid model call.
    store.holdStates = true;
    await first.clock.advance(150);
    const stored = (await store.readWindow("web:1")).map((record) => record.role);
    expect(stored).toEqual(["user", "custom", "assistant", "user"]);
    expect((await store.loadState("web:1")) as { queue: unknown[] }).toMatchObject({
      queue: [{ kind: "followup" }],
    });

    store.holdStates = false;
    const second = gatewayOn(store);
    await second.gateway.start();
    await second.clock.runUntilIdle({ isBusy: () => second.gateway.isBusy });

    const records = await store.readWindow("web:1");
    const users = records.flatMap((record) => (record.role === "user" ? [record.messageId] : []));
    expect(users).toEqual(["k1", "k2"]);
    const finals = records.flatMap((record) => (record.role === "assistant" ? [record.text] : []));
    expect(finals).toEqual(["Re: first question", "Re: second question"]);
    expect(second.channel.sent.map((sent) => sent.text)).toEqual(["Re: second question"]);
    expect(await store.loadState("web:1")).toBeNull();
  });
});
