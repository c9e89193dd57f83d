import { describe, expect, it } from "vitest";
import { getShortestPaths, getSimplePaths } from "xstate/graph";
import { LaneClearedError, LaneTimeoutError } from "../../src/errors.js";
import { type LaneEntryEvent, laneEntryMachine } from "../../src/machines/lane-entry.machine.js";
import { byValue, describePath, ENTRY_EVENTS, type Path, world } from "../support/lane-world.js";

// Graph tests: every shortest and every simple path of laneEntryMachine and laneSchedulerMachine is
// replayed against the real scheduler on a simulated clock. Each machine event maps to a real action
// (finish a blocker, settle the task, advance the clock, clear, abort, drain, resume) and after every
// step the scheduler must be in the path's state, with invariants 1-3 and 7-9 of docs/architecture.md holding.

// (a) One task's life -------------------------------------------------------------------------------

/**
 * The entry under test ("subject", session S, lane L of capacity 1, normal priority, 100 ms timeout,
 * the path's abort grace) is
 * held in waitingForSession by a running task of S in another lane, and in waitingForSlot by a running
 * task in L. A background "witness" waits in L too: it must never start ahead of the subject (invariant 3).
 */
async function replayEntryPath(path: Path<LaneEntryEvent>, abortGraceMs: number): Promise<void> {
  const w = world({ L: 1, side: 1 });
  const sessionBlocker = w.hold("session-blocker", { session: "S", lane: "side" });
  const laneBlocker = w.hold("lane-blocker", { lane: "L" });
  const witness = w.hold("witness", { lane: "L", priority: "background" });
  const controller = new AbortController();
  const subject = w.hold("subject", {
    session: "S",
    lane: "L",
    timeoutMs: 100,
    abortGraceMs,
    signal: controller.signal,
  });
  const failure = new Error("subject failed");
  const abortReason = new Error("subject aborted");

  const actions: Record<LaneEntryEvent["type"], () => Promise<void>> = {
    "entry.sessionFree": async () => {
      sessionBlocker.resolve("session free");
      await w.flush();
    },
    "entry.slotFree": async () => {
      laneBlocker.resolve("slot free");
      await w.flush();
    },
    "entry.succeeded": async () => {
      subject.resolve("subject result");
      await w.flush();
    },
    "entry.failed": async () => {
      subject.reject(failure);
      await w.flush();
    },
    "entry.timeout": async () => {
      const activeBefore = w.lanes.snapshot().lanes.L?.active;
      await w.clock.advance(100);
      expect(subject.signal?.aborted).toBe(true);
      if (abortGraceMs > 0) {
        // The task was told to stop and keeps its slot while it does: the witness does not overlap it.
        expect(witness.started).toBe(false);
        expect(w.lanes.snapshot().lanes.L?.active).toBe(activeBefore);
        return;
      }
      // Invariant 8: the slot is freed at once (the witness takes it) ...
      expect(witness.started).toBe(true);
      expect(w.lanes.snapshot().lanes.L?.active).toBe(activeBefore);
      expect(subject.signal?.aborted).toBe(true);
      // ... and the late result is dropped, freeing no second slot.
      subject.resolve("late result");
      await w.flush();
      expect(w.ofType("lane.lateResultDropped")).toMatchObject([{ entryId: subject.id }]);
      expect(w.lanes.snapshot().lanes.L?.active).toBe(activeBefore);
    },
    "entry.graceExpired": async () => {
      await w.clock.advance(abortGraceMs - 1);
      expect(witness.started, "the slot is held for the whole grace").toBe(false);
      await w.clock.advance(1);
      // The task never stopped: it is reported and its slot goes to the witness all the same.
      expect(w.ofType("lane.abortGraceExceeded")).toMatchObject([
        { entryId: subject.id, lane: "L", session: "S", timeoutMs: 100, abortGraceMs },
      ]);
      expect(witness.started).toBe(true);
      subject.resolve("late result");
      await w.flush();
      expect(w.ofType("lane.lateResultDropped")).toMatchObject([{ entryId: subject.id }]);
    },
    "entry.cleared": async () => {
      const waitingInL = w.tasks.filter((task) => {
        const state = task.id === undefined ? undefined : w.lanes.entryState(task.id);
        return task.lane === "L" && (state === "waitingForSession" || state === "waitingForSlot");
      });
      const runningBefore = [...w.running.values()];
      expect(w.lanes.clear("L")).toBe(waitingInL.length);
      await w.flush();
      // Invariant 7: only waiting entries are rejected; active work runs on.
      for (const task of waitingInL) expect(task.caller.reason).toBeInstanceOf(LaneClearedError);
      for (const task of runningBefore) {
        expect(task.caller.status).toBe("pending");
        expect(w.lanes.entryState(task.id!)).toBe("running");
      }
    },
    "entry.aborted": async () => {
      controller.abort(abortReason);
      await w.flush();
    },
  };

  const finalOutcome: Record<string, () => void> = {
    done: () => expect(subject.caller).toEqual({ status: "fulfilled", value: "subject result" }),
    failed: () => expect(subject.caller).toEqual({ status: "rejected", reason: failure }),
    timedOut: () => expect(subject.caller.reason).toBeInstanceOf(LaneTimeoutError),
    cleared: () => expect(subject.caller.reason).toMatchObject({ code: "LANE_CLEARED", lane: "L" }),
    aborted: () => expect(subject.caller).toEqual({ status: "rejected", reason: abortReason }),
  };

  for (const step of path.steps) {
    const type = step.event.type as LaneEntryEvent["type"] | "xstate.init";
    if (type !== "xstate.init") await actions[type]();
    const state = String(step.state.value);
    // Invariant 8: the slot is freed when the task settles or the grace ran out, never before.
    if (state === "timedOut" && abortGraceMs > 0) expect(witness.started).toBe(true);
    if (step.state.status === "done") {
      expect(w.lanes.entryState(subject.id!)).toBeUndefined();
      finalOutcome[state]!();
    } else {
      expect(w.lanes.entryState(subject.id!)).toBe(state);
      expect(subject.caller.status).toBe("pending");
    }
    // Invariant 2: a subject waiting behind its session holds no slot in L.
    if (state === "waitingForSession") {
      expect(w.lanes.snapshot().lanes["session:S"]).toEqual({ active: 1, queued: 1, capacity: 1 });
    }
    // Invariant 3: the background witness never starts while the normal-priority subject waits for L.
    if (state === "waitingForSlot") expect(witness.started).toBe(false);
    if (witness.started && subject.started) {
      expect(w.startOrder.indexOf("subject")).toBeLessThan(w.startOrder.indexOf("witness"));
    }
    w.checkSlots();
  }
  await w.drainAndFinish();
}

for (const abortGraceMs of [0, 50]) {
  describe(`laneEntryMachine paths replayed on the real scheduler (abortGraceMs ${abortGraceMs})`, () => {
    const options = { events: ENTRY_EVENTS, serializeState: byValue, limit: 1_000, input: { abortGraceMs } };
    const shortest = getShortestPaths(laneEntryMachine, options) as Path<LaneEntryEvent>[];
    const simple = getSimplePaths(laneEntryMachine, options) as Path<LaneEntryEvent>[];

    it("the graph reaches every state of the entry lifecycle the grace allows", () => {
      const reached = new Set(shortest.map((path) => String(path.state.value)));
      const states = Object.keys(laneEntryMachine.states).filter((s) => abortGraceMs > 0 || s !== "stopping");
      expect([...reached].sort()).toEqual(states.sort());
      expect(simple.length).toBeGreaterThan(shortest.length);
    });

    describe("shortest paths", () => {
      for (const path of shortest) it(describePath(path), () => replayEntryPath(path, abortGraceMs));
    });

    describe("simple paths", () => {
      for (const path of simple) it(describePath(path), () => replayEntryPath(path, abortGraceMs));
    });
  });
}
