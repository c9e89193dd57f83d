import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { GatewayDrainingError, LaneTimeoutError } from "../../src/errors.js";
import { laneHarness as harness, track } from "../support/lanes.js";

// Timeouts, abort, drain and wait diagnostics, on a simulated clock: tasks are held open by deferreds
// the test settles by hand, and time moves only with clock.advance().

describe("timeouts", () => {
  it("a task past timeoutMs rejects its caller with LaneTimeoutError and frees its slot at once", async () => {
    const { lanes, hold, started, clock, ofType } = harness({ capacity: { main: 1 } });
    const slow = hold("slow", { timeoutMs: 100 });
    const next = hold("next");
    await clock.advance(99);
    expect(slow.caller.status).toBe("pending");
    await clock.advance(1);
    expect(slow.caller.reason).toBeInstanceOf(LaneTimeoutError);
    expect(slow.caller.reason).toMatchObject({ code: "LANE_TIMEOUT", lane: "main", timeoutMs: 100 });
    expect(started).toEqual(["slow", "next"]);
    expect(lanes.entryState(next.id!)).toBe("running");
    expect(ofType("lane.timeout")).toMatchObject([{ at: 100, entryId: slow.id, timeoutMs: 100 }]);
    expect(ofType("lane.ended").map((event) => event.status)).toEqual(["timedOut"]);
  });

  it("the timed-out task's signal is aborted with the LaneTimeoutError", async () => {
    const { hold, clock } = harness();
    const slow = hold("slow", { timeoutMs: 10 });
    expect(slow.task.signal?.aborted).toBe(false);
    await clock.advance(10);
    expect(slow.task.signal?.aborted).toBe(true);
    expect(slow.task.signal?.reason).toBe(slow.caller.reason);
  });

  it("a late result is dropped, never delivered, and frees no second slot", async () => {
    const { lanes, hold, started, clock, ofType, flush } = harness({ capacity: { main: 1 } });
    const slow = hold("slow", { timeoutMs: 100 });
    hold("second");
    const third = hold("third");
    await clock.advance(100);
    slow.gate.resolve("too late");
    await flush();
    expect(slow.caller.reason).toBeInstanceOf(LaneTimeoutError);
    expect(ofType("lane.lateResultDropped")).toMatchObject([{ entryId: slow.id, lane: "main" }]);
    expect(started).toEqual(["slow", "second"]);
    expect(lanes.entryState(third.id!)).toBe("waitingForSlot");
    expect(lanes.snapshot().lanes.main).toEqual({ active: 1, queued: 1, capacity: 1 });
  });

  it("a late error is dropped the same way", async () => {
    const { lanes, hold, clock, ofType, flush } = harness();
    const slow = hold("slow", { timeoutMs: 5 });
    await clock.advance(5);
    slow.gate.reject(new Error("late failure"));
    await flush();
    expect(slow.caller.reason).toBeInstanceOf(LaneTimeoutError);
    expect(ofType("lane.lateResultDropped")).toHaveLength(1);
    expect(lanes.activeCount).toBe(0);
  });

  it("a timed-out task frees its session: the session's next entry starts", async () => {
    const { hold, started, clock } = harness();
    hold("a1", { session: "A", timeoutMs: 50 });
    hold("a2", { session: "A" });
    await clock.advance(50);
    expect(started).toEqual(["a1", "a2"]);
  });

  it("a task that ends in time is never timed out", async () => {
    const { hold, clock, ofType, flush } = harness();
    const quick = hold("quick", { timeoutMs: 100 });
    quick.gate.resolve("in time");
    await flush();
    await clock.advance(1_000);
    expect(quick.caller).toEqual({ status: "fulfilled", value: "in time" });
    expect(ofType("lane.timeout")).toEqual([]);
  });

  it("the timeout counts from the start, not from the submission", async () => {
    const { hold, clock } = harness({ capacity: { main: 1 } });
    const first = hold("first");
    const later = hold("later", { timeoutMs: 100 });
    await clock.advance(500);
    first.gate.resolve("x");
    await clock.advance(99);
    expect(later.caller.status).toBe("pending");
    await clock.advance(1);
    expect(later.caller.reason).toBeInstanceOf(LaneTimeoutError);
  });
});

describe("abort", () => {
  it("aborting a signal while waiting removes just that entry, rejecting with the signal's reason", async () => {
    const { lanes, hold, started, ofType, flush } = harness({ capacity: { main: 1 } });
    const controller = new AbortController();
    const running = hold("running");
    const before = hold("before");
    const aborted = hold("aborted", { signal: controller.signal });
    const after = hold("after");
    const reason = new Error("user left");
    controller.abort(reason);
    await flush();
    expect(aborted.caller).toEqual({ status: "rejected", reason });
    expect(ofType("lane.aborted")).toMatchObject([{ entryId: aborted.id }]);
    expect(lanes.queuedCount).toBe(2);
    running.gate.resolve("x");
    await flush();
    before.gate.resolve("x");
    await flush();
    expect(started).toEqual(["running", "before", "after"]);
    expect(after.caller.status).toBe("pending");
  });

  it("aborting a session's entry that waits for a slot lets the session's next entry move up", async () => {
    const { lanes, hold } = harness({ capacity: { main: 1 } });
    const controller = new AbortController();
    hold("blocker");
    const a1 = hold("a1", { session: "A", signal: controller.signal });
    const a2 = hold("a2", { session: "A" });
    expect(lanes.entryState(a2.id!)).toBe("waitingForSession");
    controller.abort();
    expect(lanes.entryState(a1.id!)).toBeUndefined();
    expect(lanes.entryState(a2.id!)).toBe("waitingForSlot");
  });

  it("an already-aborted signal never queues", async () => {
    const { lanes, hold, started, ofType, flush } = harness();
    const reason = new Error("gone already");
    const task = hold("never", { session: "A", signal: AbortSignal.abort(reason) });
    await flush();
    expect(task.caller).toEqual({ status: "rejected", reason });
    expect(task.id).toBeUndefined();
    expect(ofType("lane.enqueued")).toEqual([]);
    expect(started).toEqual([]);
    expect(lanes.snapshot().lanes["session:A"]).toBeUndefined();
  });

  it("a running task receives the signal, and its own outcome still reaches the caller", async () => {
    const { lanes, hold, flush } = harness();
    const controller = new AbortController();
    const task = hold("task", { signal: controller.signal });
    const reason = new Error("stop");
    controller.abort(reason);
    expect(task.task.signal?.aborted).toBe(true);
    expect(task.task.signal?.reason).toBe(reason);
    expect(lanes.entryState(task.id!)).toBe("running");
    task.gate.resolve("stopped cleanly");
    await flush();
    expect(task.caller).toEqual({ status: "fulfilled", value: "stopped cleanly" });
  });

  it("a running task with a timeout receives the caller's abort too", () => {
    const { hold } = harness();
    const controller = new AbortController();
    const task = hold("task", { signal: controller.signal, timeoutMs: 1_000 });
    controller.abort("cancelled");
    expect(task.task.signal?.aborted).toBe(true);
    expect(task.task.signal?.reason).toBe("cancelled");
  });

  it("a signal shared by many tasks keeps no listener once they end", async () => {
    const { lanes } = harness();
    const controller = new AbortController();
    let listeners = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      listeners++;
      add(...args);
    }) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      listeners--;
      remove(...args);
    }) as typeof remove;
    for (let i = 0; i < 20; i++) await lanes.run({ signal, timeoutMs: 1_000, session: "A" }, async () => i);
    expect(listeners).toBe(0);
  });

  it("a task without a timeout that starts at once adds no listener; one that waits does, until it ends", async () => {
    const { lanes, hold, flush } = harness({ capacity: { main: 1 } });
    const controller = new AbortController();
    const abortListeners = () => getEventListeners(controller.signal, "abort").length;
    const first = hold("first", { signal: controller.signal });
    expect(lanes.entryState(first.id!)).toBe("running");
    expect(abortListeners()).toBe(0);
    const second = hold("second", { signal: controller.signal });
    expect(lanes.entryState(second.id!)).toBe("waitingForSlot");
    expect(abortListeners()).toBe(1);
    first.gate.resolve("1");
    await flush();
    expect(lanes.entryState(second.id!)).toBe("running");
    second.gate.resolve("2");
    await flush();
    expect(abortListeners()).toBe(0);
    expect([first.caller.value, second.caller.value]).toEqual(["1", "2"]);
  });
});

describe("drain", () => {
  it("after drain(), run() rejects at once with GatewayDrainingError", async () => {
    const { lanes, hold, ofType, flush } = harness();
    hold("running");
    void lanes.drain();
    expect(lanes.isDraining).toBe(true);
    const late = hold("late", { session: "A" });
    await flush();
    expect(late.caller.reason).toBeInstanceOf(GatewayDrainingError);
    expect((late.caller.reason as GatewayDrainingError).code).toBe("GATEWAY_DRAINING");
    expect(late.id).toBeUndefined();
    expect(ofType("lane.rejected")).toMatchObject([{ session: "A", reason: "draining" }]);
  });

  it("accepted waiting work still runs, and drain resolves when no task runs", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { main: 1 } });
    const first = hold("first");
    const waiting = hold("waiting", { session: "A" });
    const drained = track(lanes.drain());
    first.gate.resolve("x");
    await flush();
    expect(started).toEqual(["first", "waiting"]);
    expect(drained.status).toBe("pending");
    waiting.gate.resolve("y");
    await flush();
    expect(drained.status).toBe("fulfilled");
    expect(lanes.actor.getSnapshot().value).toBe("drained");
  });

  it("drain with nothing running resolves at once", async () => {
    const { lanes, flush } = harness();
    const drained = track(lanes.drain());
    await flush();
    expect(drained.status).toBe("fulfilled");
  });

  it("resume() admits work again", async () => {
    const { lanes, hold, ofType, flush } = harness();
    await lanes.drain();
    lanes.resume();
    expect(lanes.isDraining).toBe(false);
    const task = hold("task");
    task.gate.resolve("ran");
    await flush();
    expect(task.caller).toEqual({ status: "fulfilled", value: "ran" });
    expect(ofType("lane.draining")).toHaveLength(1);
    expect(ofType("lane.resumed")).toHaveLength(1);
  });

  it("a drain() still resolves when resume() came before the active work ended", async () => {
    const { lanes, hold, flush } = harness();
    const task = hold("task");
    const drained = track(lanes.drain());
    lanes.resume();
    task.gate.resolve("x");
    await flush();
    expect(drained.status).toBe("fulfilled");
  });

  it("a second drain() waits for tasks a paused lane started after the first one resolved", async () => {
    const { lanes, hold, flush } = harness({ capacity: { main: 0 } });
    const parked = hold("parked");
    await lanes.drain();
    lanes.setCapacity("main", 1);
    const again = track(lanes.drain());
    await flush();
    expect(again.status).toBe("pending");
    parked.gate.resolve("x");
    await flush();
    expect(again.status).toBe("fulfilled");
  });
});

describe("wait diagnostics", () => {
  it("an entry waiting warnAfterMs reports lane.waitExceeded while it still waits", async () => {
    const { lanes, hold, clock, ofType } = harness({ capacity: { main: 1 }, warnAfterMs: 1_000 });
    hold("running");
    hold("n1");
    hold("fg", { priority: "foreground" });
    const n2 = hold("n2");
    hold("bg", { priority: "background" });
    await clock.advance(999);
    expect(ofType("lane.waitExceeded")).toEqual([]);
    await clock.advance(1);
    expect(lanes.entryState(n2.id!)).toBe("waitingForSlot");
    expect(ofType("lane.waitExceeded")).toHaveLength(4);
    expect(ofType("lane.waitExceeded").find((event) => event.entryId === n2.id)).toEqual({
      at: 1_000,
      type: "lane.waitExceeded",
      lane: "main",
      session: undefined,
      entryId: n2.id,
      waitedMs: 1_000,
      waitingFor: "slot",
      starting: false,
      queueAhead: 2,
      activeAhead: 1,
      activeNow: 1,
      queueBehind: 1,
    });
  });

  it("a warned entry reports once more when it starts, with starting: true", async () => {
    const { hold, clock, ofType } = harness({ capacity: { main: 1 }, warnAfterMs: 100 });
    const running = hold("running");
    const late = hold("late");
    await clock.advance(250);
    running.gate.resolve("x");
    await clock.advance(0);
    const reports = ofType("lane.waitExceeded").filter((event) => event.entryId === late.id);
    expect(reports.map((event) => [event.at, event.starting, event.waitedMs])).toEqual([
      [100, false, 100],
      [250, true, 250],
    ]);
  });

  it("entries enqueued over time are each reported once, warnAfterMs after their enqueue", async () => {
    const { hold, clock, ofType } = harness({ capacity: { main: 1 }, warnAfterMs: 100 });
    const running = hold("running");
    const a = hold("a", { session: "S" });
    await clock.advance(30);
    const b = hold("b", { session: "S" });
    const quick = hold("quick");
    await clock.advance(30);
    const c = hold("c");
    await clock.advance(50);
    running.gate.resolve("x");
    await clock.advance(100);
    const reports = ofType("lane.waitExceeded").map((event) => [event.entryId, event.at, event.starting]);
    expect(reports).toEqual([
      [a.id, 100, false],
      [a.id, 110, true],
      [b.id, 130, false],
      [quick.id, 130, false],
      [c.id, 160, false],
    ]);
  });

  it("warnAfterMs defaults to 2000 ms, and an entry that starts sooner reports nothing", async () => {
    const { hold, clock, ofType } = harness({ capacity: { main: 1 } });
    const first = hold("first");
    hold("quick");
    const slow = hold("slow");
    await clock.advance(1_500);
    first.gate.resolve("x");
    await clock.advance(499);
    expect(ofType("lane.waitExceeded")).toEqual([]);
    await clock.advance(1);
    expect(ofType("lane.waitExceeded")).toMatchObject([{ entryId: slow.id, waitedMs: 2_000 }]);
  });

  it("an entry waiting for its session reports the session's queue", async () => {
    const { hold, clock, ofType } = harness({ capacity: { main: 4 }, warnAfterMs: 10 });
    hold("a1", { session: "A" });
    hold("a2", { session: "A" });
    const a3 = hold("a3", { session: "A" });
    hold("a4", { session: "A" });
    hold("b1", { session: "B" });
    await clock.advance(10);
    expect(ofType("lane.waitExceeded").find((event) => event.entryId === a3.id)).toMatchObject({
      session: "A",
      waitingFor: "session",
      queueAhead: 1,
      activeAhead: 1,
      activeNow: 2,
      queueBehind: 1,
    });
  });

  it("a session whose first entry still waits for a slot counts it as queued ahead, not active", async () => {
    const { hold, clock, ofType } = harness({ capacity: { main: 1 }, warnAfterMs: 10 });
    hold("blocker");
    hold("a1", { session: "A" });
    const a2 = hold("a2", { session: "A" });
    await clock.advance(10);
    expect(ofType("lane.waitExceeded").find((event) => event.entryId === a2.id)).toMatchObject({
      waitingFor: "session",
      queueAhead: 1,
      activeAhead: 0,
      queueBehind: 0,
    });
  });

  it("queue positions stay exact over a large mixed backlog", async () => {
    const { lanes, clock, ofType } = harness({ capacity: { main: 0 }, warnAfterMs: 10 });
    const priorities = ["background", "normal", "foreground"] as const;
    for (let i = 0; i < 3_000; i++) void lanes.run({ priority: priorities[i % 3] }, async () => i);
    await clock.advance(10);
    const reports = ofType("lane.waitExceeded");
    expect(reports).toHaveLength(3_000);
    // Entry i is the (i div 3)-th of its level; foreground (i % 3 == 2) starts first.
    for (const [i, report] of reports.entries()) {
      const level = 2 - (i % 3);
      const ahead = level * 1_000 + Math.floor(i / 3);
      expect([report.queueAhead, report.queueBehind]).toEqual([ahead, 3_000 - ahead - 1]);
    }
  });
});
