import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { LaneClearedError } from "../../src/errors.js";
import { laneForNested, priorityForTrigger } from "../../src/policy/lane-priority.js";
import { laneHarness as harness } from "../support/lanes.js";

// Sessions, workload lanes, priorities, capacity, clear, snapshot and the task-lifecycle events.
// Timeouts, abort, drain and wait diagnostics: lane-scheduler.timing.test.ts; bad input:
// lane-scheduler.errors.test.ts. Every task is held open by a deferred the test settles by hand.

describe("session lanes nested in workload lanes", () => {
  it("a session runs one task at a time, in submission order", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { main: 8 } });
    const a1 = hold("a1", { session: "A" });
    const a2 = hold("a2", { session: "A" });
    const a3 = hold("a3", { session: "A" });
    expect(started).toEqual(["a1"]);
    expect(lanes.entryState(a2.id!)).toBe("waitingForSession");
    a1.gate.resolve("1");
    await flush();
    expect(started).toEqual(["a1", "a2"]);
    a2.gate.resolve("2");
    await flush();
    expect(started).toEqual(["a1", "a2", "a3"]);
    a3.gate.resolve("3");
    await flush();
    expect([a1.caller.value, a2.caller.value, a3.caller.value]).toEqual(["1", "2", "3"]);
  });

  it("a waiting entry of a busy session holds no workload slot, so other sessions proceed", () => {
    const { lanes, hold, started } = harness({ capacity: { main: 2 } });
    hold("a1", { session: "A" });
    const a2 = hold("a2", { session: "A" });
    const a3 = hold("a3", { session: "A" });
    const b1 = hold("b1", { session: "B" });
    expect(started).toEqual(["a1", "b1"]);
    expect(lanes.entryState(a2.id!)).toBe("waitingForSession");
    expect(lanes.entryState(a3.id!)).toBe("waitingForSession");
    expect(lanes.entryState(b1.id!)).toBe("running");
    expect(lanes.snapshot().lanes.main).toEqual({ active: 2, queued: 0, capacity: 2 });
    expect(lanes.snapshot().lanes["session:A"]).toEqual({ active: 1, queued: 2, capacity: 1 });
  });

  it("a task without a session goes straight to its workload lane", () => {
    const { lanes, hold } = harness({ capacity: { main: 1 } });
    const a = hold("a");
    const b = hold("b");
    expect(lanes.entryState(a.id!)).toBe("running");
    expect(lanes.entryState(b.id!)).toBe("waitingForSlot");
    expect(Object.keys(lanes.snapshot().lanes).filter((name) => name.startsWith("session:"))).toEqual([]);
  });

  it("an unconfigured workload lane has capacity 1, whatever its name", () => {
    const { lanes, hold, started } = harness();
    for (const lane of ["cron", "cron-nested", "subagent", "media-export"]) {
      hold(`${lane}-1`, { lane });
      hold(`${lane}-2`, { lane });
      expect(lanes.snapshot().lanes[lane]).toEqual({ active: 1, queued: 1, capacity: 1 });
    }
    expect(started).toEqual(["cron-1", "cron-nested-1", "subagent-1", "media-export-1"]);
  });

  it("main defaults to max(8, 4 × CPUs) and configured lanes take their capacity", () => {
    const { lanes } = harness({ capacity: { cron: 3 } });
    expect(lanes.snapshot().lanes.main?.capacity).toBe(Math.max(8, 4 * availableParallelism()));
    expect(lanes.snapshot().lanes.cron?.capacity).toBe(3);
  });

  it("a session's tasks in different workload lanes still run one at a time", async () => {
    const { hold, started, flush } = harness({ capacity: { main: 4, cron: 4 } });
    const a1 = hold("a1", { session: "A", lane: "main" });
    hold("a2", { session: "A", lane: "cron" });
    hold("b1", { session: "B", lane: "cron" });
    expect(started).toEqual(["a1", "b1"]);
    a1.gate.resolve("done");
    await flush();
    expect(started).toEqual(["a1", "b1", "a2"]);
  });
});

describe("priorities", () => {
  it("waiting entries start foreground first, then normal, then background", async () => {
    const { hold, started, flush } = harness({ capacity: { main: 1 } });
    const tasks = [
      hold("blocker"),
      hold("bg", { priority: "background" }),
      hold("n1", { priority: "normal" }),
      hold("fg", { priority: "foreground" }),
      hold("n2"),
    ];
    for (const task of tasks) {
      task.gate.resolve(task.name);
      await flush();
    }
    expect(started).toEqual(["blocker", "fg", "n1", "n2", "bg"]);
  });

  it("within a priority, entries start in the order they reach the workload lane", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { main: 1 } });
    const blocker = hold("blocker");
    const a1 = hold("a1", { session: "A" });
    const a2 = hold("a2", { session: "A" }); // submitted before b1, but reaches main only when a1 ends
    const b1 = hold("b1", { session: "B" });
    blocker.gate.resolve("x");
    await flush();
    expect(started).toEqual(["blocker", "a1"]);
    a1.gate.resolve("x");
    await flush();
    expect(started).toEqual(["blocker", "a1", "b1"]);
    expect(lanes.entryState(a2.id!)).toBe("waitingForSlot");
    b1.gate.resolve("x");
    await flush();
    expect(started).toEqual(["blocker", "a1", "b1", "a2"]);
  });

  it("a session's own waiting entries move up by priority, then submission order", async () => {
    const { hold, started, flush } = harness({ capacity: { main: 4 } });
    const tasks = [
      hold("a1", { session: "A" }),
      hold("a-bg", { session: "A", priority: "background" }),
      hold("a-n", { session: "A" }),
      hold("a-fg", { session: "A", priority: "foreground" }),
    ];
    for (const task of tasks) {
      task.gate.resolve(task.name);
      await flush();
    }
    expect(started).toEqual(["a1", "a-fg", "a-n", "a-bg"]);
  });

  it("user and manual triggers are foreground", () => {
    expect(priorityForTrigger("user")).toBe("foreground");
    expect(priorityForTrigger("manual")).toBe("foreground");
  });

  it("cron, heartbeat, memory and overflow triggers are background", () => {
    for (const trigger of ["cron", "heartbeat", "memory", "overflow"]) {
      expect(priorityForTrigger(trigger)).toBe("background");
    }
  });

  it("restart recovery and inter-session work are background whatever the trigger", () => {
    expect(priorityForTrigger("user", { restartRecovery: true })).toBe("background");
    expect(priorityForTrigger("manual", { interSession: true })).toBe("background");
    expect(priorityForTrigger("subagent", { restartRecovery: true })).toBe("background");
  });

  it("any other trigger is normal", () => {
    for (const trigger of ["subagent", "recovery", "commitment", "webhook"]) {
      expect(priorityForTrigger(trigger)).toBe("normal");
    }
  });

  it("nested cron work runs in cron-nested; other lanes nest in themselves", () => {
    expect(laneForNested("cron")).toBe("cron-nested");
    expect(laneForNested("main")).toBe("main");
    expect(laneForNested("subagent")).toBe("subagent");
  });
});

describe("capacity", () => {
  it("capacity 0 pauses a lane: entries wait and none starts", async () => {
    const { lanes, hold, started, clock } = harness({ capacity: { main: 0 } });
    const a = hold("a", { session: "A" });
    hold("b");
    await clock.advance(60_000);
    expect(started).toEqual([]);
    expect(lanes.entryState(a.id!)).toBe("waitingForSlot");
    expect(lanes.snapshot().lanes.main).toEqual({ active: 0, queued: 2, capacity: 0 });
  });

  it("raising capacity starts waiting entries at once, by priority", () => {
    const { lanes, hold, started } = harness({ capacity: { main: 0 } });
    hold("n1");
    hold("bg", { priority: "background" });
    hold("fg", { priority: "foreground" });
    hold("n2");
    lanes.setCapacity("main", 3);
    expect(started).toEqual(["fg", "n1", "n2"]);
    expect(lanes.snapshot().lanes.main).toEqual({ active: 3, queued: 1, capacity: 3 });
  });

  it("lowering capacity lets running tasks finish and starts no more than the new capacity", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { main: 3 } });
    const running = [hold("r1"), hold("r2"), hold("r3")];
    hold("w1");
    hold("w2");
    lanes.setCapacity("main", 1);
    expect(lanes.snapshot().lanes.main).toEqual({ active: 3, queued: 2, capacity: 1 });
    running[0]?.gate.resolve("x");
    running[1]?.gate.resolve("x");
    await flush();
    expect(started).toEqual(["r1", "r2", "r3"]);
    running[2]?.gate.resolve("x");
    await flush();
    expect(started).toEqual(["r1", "r2", "r3", "w1"]);
    expect(lanes.snapshot().lanes.main?.active).toBe(1);
  });

  it("setCapacity reports lane.capacityChanged", () => {
    const { lanes, ofType } = harness();
    lanes.setCapacity("cron", 0);
    lanes.setCapacity("cron", 2);
    expect(ofType("lane.capacityChanged").map((event) => [event.lane, event.capacity])).toEqual([
      ["cron", 0],
      ["cron", 2],
    ]);
  });
});

describe("clear", () => {
  it("clear rejects only waiting entries with LaneClearedError and returns the count; active work runs on", async () => {
    const { lanes, hold, flush } = harness({ capacity: { main: 1 } });
    const running = hold("running");
    const waiting = [hold("w1"), hold("w2", { priority: "foreground" })];
    expect(lanes.clear("main")).toBe(2);
    await flush();
    for (const entry of waiting) {
      expect(entry.caller.reason).toBeInstanceOf(LaneClearedError);
      expect((entry.caller.reason as LaneClearedError).code).toBe("LANE_CLEARED");
    }
    expect(lanes.entryState(running.id!)).toBe("running");
    running.gate.resolve("finished");
    await flush();
    expect(running.caller).toEqual({ status: "fulfilled", value: "finished" });
  });

  it("clearing a session lane rejects that session's waiting entries, the one waiting for a slot included", async () => {
    const { lanes, hold, flush } = harness({ capacity: { main: 1 } });
    const blocker = hold("blocker");
    const a1 = hold("a1", { session: "A" });
    const a2 = hold("a2", { session: "A" });
    const b1 = hold("b1", { session: "B" });
    expect(lanes.entryState(a1.id!)).toBe("waitingForSlot");
    expect(lanes.clear("session:A")).toBe(2);
    await flush();
    expect(a1.caller.reason).toBeInstanceOf(LaneClearedError);
    expect(a2.caller.reason).toBeInstanceOf(LaneClearedError);
    expect(lanes.entryState(b1.id!)).toBe("waitingForSlot");
    expect(lanes.entryState(blocker.id!)).toBe("running");
    expect(lanes.snapshot().lanes["session:A"]).toBeUndefined();
  });

  it("clearing a workload lane also rejects entries of that lane still waiting behind their session", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { main: 2, cron: 1 } });
    const a1 = hold("a1", { session: "A", lane: "main" });
    const aCron = hold("a-cron", { session: "A", lane: "cron" });
    const aMain = hold("a-main", { session: "A", lane: "main" });
    expect(lanes.entryState(aCron.id!)).toBe("waitingForSession");
    expect(lanes.clear("cron")).toBe(1);
    await flush();
    expect(aCron.caller.reason).toBeInstanceOf(LaneClearedError);
    expect((aCron.caller.reason as LaneClearedError).lane).toBe("cron");
    expect(lanes.entryState(aMain.id!)).toBe("waitingForSession");
    a1.gate.resolve("x");
    await flush();
    expect(started).toEqual(["a1", "a-main"]);
  });

  it("clearing the lane a session's first entry waits in lets the session's next entry go on", async () => {
    const { lanes, hold, started } = harness({ capacity: { main: 2, cron: 1 } });
    hold("cron-blocker", { lane: "cron" });
    const aCron = hold("a-cron", { session: "A", lane: "cron" });
    const aMain = hold("a-main", { session: "A", lane: "main" });
    expect(lanes.clear("cron")).toBe(1);
    expect(lanes.entryState(aCron.id!)).toBeUndefined();
    expect(lanes.entryState(aMain.id!)).toBe("running");
    expect(started).toEqual(["cron-blocker", "a-main"]);
  });

  it("clearing an unknown lane, or an idle session, returns 0", () => {
    const { lanes, hold } = harness();
    hold("a", { session: "A" });
    expect(lanes.clear("nowhere")).toBe(0);
    expect(lanes.clear("session:nobody")).toBe(0);
    expect(lanes.clear("session:A")).toBe(0);
  });

  it("clear reports lane.cleared with the count", () => {
    const { lanes, hold, ofType } = harness({ capacity: { main: 1 } });
    hold("running");
    hold("w1");
    hold("w2");
    lanes.clear("main");
    expect(ofType("lane.cleared")).toMatchObject([{ type: "lane.cleared", lane: "main", count: 2 }]);
  });
});

describe("snapshot", () => {
  it("idle session lanes disappear from snapshot(); configured and paused lanes stay", async () => {
    const { lanes, hold, flush } = harness({ capacity: { main: 2, cron: 1 } });
    lanes.setCapacity("maintenance", 0);
    const a = hold("a", { session: "A", lane: "cron" });
    const x = hold("x", { lane: "adhoc" });
    expect(Object.keys(lanes.snapshot().lanes).sort()).toEqual([
      "adhoc",
      "cron",
      "main",
      "maintenance",
      "session:A",
    ]);
    a.gate.resolve("x");
    x.gate.resolve("x");
    await flush();
    expect(lanes.snapshot()).toEqual({
      lanes: {
        main: { active: 0, queued: 0, capacity: 2 },
        cron: { active: 0, queued: 0, capacity: 1 },
        maintenance: { active: 0, queued: 0, capacity: 0 },
      },
    });
  });

  it("an unconfigured lane stays while an entry waits behind its session to enter it", async () => {
    const { lanes, hold, started, flush } = harness({ capacity: { main: 4 } });
    const a1 = hold("a1", { session: "A" });
    const aAdhoc = hold("a-adhoc", { session: "A", lane: "adhoc" });
    const other = hold("other", { lane: "adhoc" });
    other.gate.resolve("x");
    await flush();
    expect(lanes.snapshot().lanes.adhoc).toEqual({ active: 0, queued: 0, capacity: 1 });
    expect(lanes.clear("adhoc")).toBe(1);
    await flush();
    expect(aAdhoc.caller.reason).toBeInstanceOf(LaneClearedError);
    // A lane of the same name must not exist twice: capacity 1 holds across old and new entries.
    const b = hold("b", { session: "B", lane: "adhoc" });
    const a2 = hold("a2", { session: "A", lane: "adhoc" });
    a1.gate.resolve("x");
    await flush();
    expect(started).toEqual(["a1", "other", "b"]);
    expect(lanes.entryState(a2.id!)).toBe("waitingForSlot");
    expect(lanes.snapshot().lanes.adhoc).toEqual({ active: 1, queued: 1, capacity: 1 });
    b.gate.resolve("x");
    await flush();
    expect(started).toEqual(["a1", "other", "b", "a2"]);
  });

  it("activeCount and queuedCount count tasks across all lanes", () => {
    const { lanes, hold } = harness({ capacity: { main: 1 } });
    hold("a", { session: "A" });
    hold("b", { session: "A" });
    hold("c", { lane: "cron" });
    hold("d");
    expect([lanes.activeCount, lanes.queuedCount]).toEqual([2, 2]);
  });

  it("entryState follows each of hundreds of tasks that end out of order, and forgets each one that ended", async () => {
    const { lanes, hold, flush } = harness({ capacity: { main: 300 } });
    const tasks = Array.from({ length: 300 }, (_, i) => hold(`t${i}`, i % 4 === 2 ? { session: "S" } : {}));
    // Tasks 2, 6, 10, ... share session S (all but the first wait); the others run. The odd-numbered
    // ones end, last first.
    for (let i = tasks.length - 1; i >= 0; i--) if (i % 2 === 1) tasks[i]!.gate.resolve("x");
    await flush();
    for (const [i, task] of tasks.entries()) {
      const expected = i % 2 === 1 ? undefined : i % 4 === 2 && i > 2 ? "waitingForSession" : "running";
      expect([task.name, lanes.entryState(task.id!)]).toEqual([task.name, expected]);
    }
    for (const task of tasks) task.gate.resolve("x");
    for (let i = 0; i < 200; i++) await flush();
    expect(tasks.map((task) => lanes.entryState(task.id!)).filter(Boolean)).toEqual([]);
  });
});

describe("lifecycle events", () => {
  it("a task's life is reported as lane.enqueued, lane.started and lane.ended with its entry id", async () => {
    const { hold, events, clock } = harness({ capacity: { main: 1 } });
    const first = hold("first");
    const task = hold("second", { session: "A", priority: "foreground" });
    await clock.advance(50);
    first.gate.resolve("x");
    await clock.advance(10);
    task.gate.reject(new Error("boom"));
    await clock.advance(0);
    const ofTask = events.filter((event) => "entryId" in event && event.entryId === task.id);
    expect(ofTask).toEqual([
      { at: 0, type: "lane.enqueued", lane: "main", session: "A", entryId: task.id, priority: "foreground" },
      { at: 50, type: "lane.started", lane: "main", session: "A", entryId: task.id, waitedMs: 50 },
      { at: 60, type: "lane.ended", lane: "main", session: "A", entryId: task.id, status: "failed" },
    ]);
  });
});
