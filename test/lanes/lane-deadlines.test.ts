import { describe, expect, it } from "vitest";
import { ConfigError, LaneTimeoutError } from "../../src/errors.js";
import { laneHarness as harness } from "../support/lanes.js";

// Deadlines with an abort grace, on a simulated clock: at timeoutMs the task's signal aborts; its slot
// is freed when it settles or abortGraceMs later, whichever comes first, and only then does its caller
// reject with LaneTimeoutError.

describe("deadlines with abortGraceMs", () => {
  it("a task that stops within its grace keeps its slot until it stops: the next task never overlaps it", async () => {
    const { lanes, hold, started, clock, ofType } = harness({ capacity: { main: 1 } });
    const slow = hold("slow", { timeoutMs: 100, abortGraceMs: 50 });
    const next = hold("next");
    await clock.advance(100);
    expect(slow.task.signal?.aborted).toBe(true);
    expect(slow.task.signal?.reason).toBeInstanceOf(LaneTimeoutError);
    expect(lanes.entryState(slow.id!)).toBe("stopping");
    expect(lanes.snapshot().lanes.main).toEqual({ active: 1, queued: 1, capacity: 1 });
    expect(slow.caller.status).toBe("pending");
    expect(started).toEqual(["slow"]);
    expect(ofType("lane.timeout")).toMatchObject([{ entryId: slow.id, timeoutMs: 100, abortGraceMs: 50 }]);
    await clock.advance(20);
    slow.gate.resolve("stopped");
    await clock.advance(0);
    expect(slow.caller.reason).toBe(slow.task.signal?.reason);
    expect(started).toEqual(["slow", "next"]);
    expect(lanes.entryState(next.id!)).toBe("running");
    expect(ofType("lane.ended")).toMatchObject([{ at: 120, entryId: slow.id, status: "timedOut" }]);
    expect(ofType("lane.abortGraceExceeded")).toEqual([]);
  });

  it("a task that fails as it stops is a timeout too", async () => {
    const { hold, clock } = harness();
    const slow = hold("slow", { timeoutMs: 10, abortGraceMs: 10 });
    await clock.advance(10);
    slow.gate.reject(new Error("AbortError"));
    await clock.advance(0);
    expect(slow.caller.reason).toMatchObject({ code: "LANE_TIMEOUT", timeoutMs: 10 });
  });

  it("a task that ignores its signal is cut loose after the grace, reported, and its late result dropped", async () => {
    const { lanes, hold, started, clock, ofType, flush } = harness({ capacity: { main: 1 } });
    const hung = hold("hung", { session: "A", timeoutMs: 100, abortGraceMs: 50 });
    hold("next", { session: "A" });
    await clock.advance(149);
    expect(started).toEqual(["hung"]);
    // Stopping, it still holds its session: the session's next task waits behind it.
    expect(lanes.snapshot().lanes["session:A"]).toEqual({ active: 1, queued: 1, capacity: 1 });
    expect(hung.caller.status).toBe("pending");
    await clock.advance(1);
    expect(hung.caller.reason).toBeInstanceOf(LaneTimeoutError);
    expect(ofType("lane.abortGraceExceeded")).toMatchObject([
      { at: 150, lane: "main", session: "A", entryId: hung.id, timeoutMs: 100, abortGraceMs: 50 },
    ]);
    // Its session is free too: one hung task never blocks a lane or a session for good.
    expect(started).toEqual(["hung", "next"]);
    hung.gate.resolve("much too late");
    await flush();
    expect(ofType("lane.lateResultDropped")).toMatchObject([{ entryId: hung.id }]);
    expect(lanes.snapshot().lanes.main).toEqual({ active: 1, queued: 0, capacity: 1 });
  });

  it("without a grace the slot is freed at the deadline, as before", async () => {
    const { hold, started, clock } = harness({ capacity: { main: 1 } });
    const slow = hold("slow", { timeoutMs: 100, abortGraceMs: 0 });
    hold("next");
    await clock.advance(100);
    expect(slow.caller.reason).toBeInstanceOf(LaneTimeoutError);
    expect(started).toEqual(["slow", "next"]);
  });

  it("a stopping task still counts against its capacity group and against drain()", async () => {
    const { lanes, hold, started, clock } = harness({
      capacity: { cron: 2, subagent: 2 },
      groups: { background: { capacity: 1, lanes: ["cron", "subagent"] } },
    });
    const slow = hold("slow", { lane: "cron", timeoutMs: 10, abortGraceMs: 30 });
    hold("other", { lane: "subagent" });
    await clock.advance(10);
    let drained = false;
    void lanes.drain().then(() => {
      drained = true;
    });
    await clock.advance(29);
    expect(started).toEqual(["slow"]);
    expect(drained).toBe(false);
    slow.gate.resolve("stopped");
    await clock.advance(0);
    expect(started).toEqual(["slow", "other"]);
  });

  it("a negative or non-finite abortGraceMs is refused naming the field", () => {
    const { lanes } = harness();
    for (const bad of [-1, Number.POSITIVE_INFINITY, Number.NaN, "5"]) {
      expect(() => lanes.run({ timeoutMs: 10, abortGraceMs: bad as number }, () => 1)).toThrow(ConfigError);
      expect(() => lanes.run({ timeoutMs: 10, abortGraceMs: bad as number }, () => 1)).toThrow(
        /abortGraceMs/,
      );
    }
  });
});
