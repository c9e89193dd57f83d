import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";

// A message's arrival time is one moment: the `message.received` event a page shows live and the
// `arrivedAt` its record keeps (what the page shows after a reload) are the same number, even on a
// clock that moves between two readings, as a real one does on a busy machine.

/** A simulated clock that is one millisecond later at each reading. */
class TickingClock extends SimulatedClock {
  private readings = 0;
  override now(): number {
    return super.now() + this.readings++;
  }
}

describe("a message's arrival time", () => {
  it("is the same on its message.received event and on its record, for a typed message and a trigger", async () => {
    const clock = new TickingClock();
    const store = new MemoryStore();
    const events: TillerEvent[] = [];
    const gateway = createGateway({
      config: {},
      model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
      tools: [],
      channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
      clock,
      store,
      logger: silentLogger,
    });
    gateway.subscribe((event) => {
      events.push(event);
    });
    await gateway.start();
    await gateway.receive({ session: "web:1", channel: "web", id: "m1", text: "hello" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    await gateway.trigger({ session: "web:1", trigger: "manual", text: "the build is green" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    const received = events.filter((event) => event.type === "message.received");
    const records = (await store.read("web:1")).filter((record) => record.role === "user");
    expect(records).toHaveLength(2);
    expect(received.map((event) => [event.messageId, event.at])).toEqual(
      records.map((record) => [record.messageId, record.arrivedAt]),
    );
    await gateway.stop();
  });
});
