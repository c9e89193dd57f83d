import { describe, expect, it } from "vitest";
import { laneHarness as harness } from "../support/lanes.js";

// lane.waitExceeded across an entry's two waits (for its session, then for a slot), on a simulated
// clock: one report while it waits, one more as it starts, never one per wait.

describe("wait diagnostics across an entry's waits", () => {
  it("an entry warned while waiting for its session is not warned again while it waits for a slot", async () => {
    const { lanes, hold, clock, ofType } = harness({ capacity: { main: 1 }, warnAfterMs: 100 });
    const first = hold("first", { session: "S" });
    const blocker = hold("blocker");
    const second = hold("second", { session: "S" });
    await clock.advance(150);
    first.gate.resolve("x");
    await clock.advance(0);
    // Its session is free now, but the lane's one slot went to the blocker.
    expect(lanes.entryState(second.id!)).toBe("waitingForSlot");
    await clock.advance(500);
    blocker.gate.resolve("x");
    await clock.advance(0);
    expect(lanes.entryState(second.id!)).toBe("running");
    const reports = ofType("lane.waitExceeded").filter((event) => event.entryId === second.id);
    expect(reports.map((event) => [event.at, event.waitingFor, event.starting])).toEqual([
      [100, "session", false],
      [650, "slot", true],
    ]);
  });
});
