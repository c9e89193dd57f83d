import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createLaneScheduler } from "../../src/lanes/lane-scheduler.js";

// `isObserved`: the per-task lane events are built only while someone reads them; the rest always are.

describe("lane events and their listeners", () => {
  it("per-task events reach onEvent only while isObserved() says someone reads them", async () => {
    const events: TillerEvent[] = [];
    let listening = false;
    const lanes = createLaneScheduler({
      clock: new SimulatedClock(),
      capacity: { main: 1 },
      onEvent: (event) => events.push(event),
      isObserved: () => listening,
    });
    await lanes.run({ session: "A" }, async () => "quiet");
    expect(events.map((event) => event.type)).toEqual([]);

    listening = true;
    await lanes.run({ session: "A" }, async () => "heard");
    expect(events.map((event) => event.type)).toEqual(["lane.enqueued", "lane.started", "lane.ended"]);
  });

  it("decisions that are not per-task (a clear) reach onEvent even with no reader of the rest", async () => {
    const events: TillerEvent[] = [];
    const lanes = createLaneScheduler({
      clock: new SimulatedClock(),
      capacity: { main: 0 },
      onEvent: (event) => events.push(event),
      isObserved: () => false,
    });
    const waiting = lanes.run({ session: "A" }, async () => 1);
    expect(lanes.clear("main")).toBe(1);
    await expect(waiting).rejects.toThrow();
    expect(events.map((event) => event.type)).toEqual(["lane.cleared"]);
  });

  it("without isObserved, every event reaches onEvent as before", async () => {
    const events: TillerEvent[] = [];
    const lanes = createLaneScheduler({
      clock: new SimulatedClock(),
      capacity: { main: 1 },
      onEvent: (event) => events.push(event),
    });
    await lanes.run({}, async () => 1);
    expect(events.map((event) => event.type)).toEqual(["lane.enqueued", "lane.started", "lane.ended"]);
  });
});
