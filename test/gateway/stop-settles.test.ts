import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import { type Deferred, deferred } from "../support/deferred.js";

// stop() closes the store only once the turns' last writes have landed: the state save a turn's end
// leaves on its way must not meet a closed store (a database pool that was ended refuses it).

/** A store that refuses writes once closed and can hold the clearing state save until the test releases them. */
class ClosingStore extends MemoryStore {
  closed = false;
  gate: Deferred<void> | null = null;
  override async saveState(session: string, state: unknown): Promise<void> {
    // Only the save that clears a finished turn's state is held: the message's ack waits for the others.
    const gate = state === null ? this.gate : null;
    if (gate) await gate.promise;
    if (this.closed) throw new Error("Cannot use a pool after calling end on the pool");
    return super.saveState(session, state);
  }
  override async close(): Promise<void> {
    this.closed = true;
  }
}

describe("gateway.stop()", () => {
  it("waits for the state save a turn's end left on its way before closing the store", async () => {
    const clock = new SimulatedClock();
    const store = new ClosingStore({ now: () => clock.now() });
    const channel = new LoopbackChannel({ now: () => clock.now() });
    const gateway = createGateway({
      model: new ScriptedModel([{ reply: { delayMs: 10, text: "Re: {{latestUser}}" } }], clock),
      channels: { web: channel },
      clock,
      store,
      logger: silentLogger,
    });
    const events: TillerEvent[] = [];
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    store.gate = deferred();
    await gateway.receive({ session: "web:a", channel: "web", id: "m1", text: "hello" });
    await clock.runUntilIdle();
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);
    const stopped = gateway.stop();
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(store.closed).toBe(false);
    store.gate.resolve();
    await stopped;
    expect(store.closed).toBe(true);
    expect(events.filter((event) => event.type === "state.saveFailed")).toEqual([]);
    // The turn is over: nothing is left to resume on the next start.
    expect(await store.loadState("web:a")).toBeNull();
  });
});
