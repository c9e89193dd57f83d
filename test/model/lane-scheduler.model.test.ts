import { describe, expect, it } from "vitest";
import { getPathsFromEvents, getShortestPaths, getSimplePaths } from "xstate/graph";
import { GatewayDrainingError } from "../../src/errors.js";
import { type LaneSchedulerEvent, laneSchedulerMachine } from "../../src/machines/lane-scheduler.machine.js";
import {
  byValue,
  describePath,
  type Path,
  SCHEDULER_EVENTS,
  transitionPaths,
  world,
} from "../support/lane-world.js";

// Graph tests: every shortest and every simple path of laneEntryMachine and laneSchedulerMachine is
// replayed against the real scheduler on a simulated clock. Each machine event maps to a real action
// (finish a blocker, settle the task, advance the clock, clear, abort, drain, resume) and after every
// step the scheduler must be in the path's state, with invariants 1-3 and 7-9 of docs/architecture.md holding.

// (b) Admission: open → draining → drained ----------------------------------------------------------

/** Invariant 9 on every path of the admission machine: refuse new work while draining; resolve at idle. */
async function replaySchedulerPath(path: Path<LaneSchedulerEvent>): Promise<void> {
  const w = world({ main: 1 });
  const drains: Array<{ done: boolean }> = [];
  let accepted = 0;

  const addWork = () => {
    w.hold(`running-${accepted}`, { session: `R${accepted}` });
    w.hold(`waiting-${accepted}`, { session: `W${accepted}` });
    accepted++;
  };
  addWork();

  const actions: Record<LaneSchedulerEvent["type"], () => Promise<void>> = {
    "lanes.drain": async () => {
      if (w.lanes.activeCount === 0) addWork(); // so that draining lasts until the test ends the work
      const drain = { done: false };
      drains.push(drain);
      void w.lanes.drain().then(() => {
        drain.done = true;
      });
      await w.flush();
    },
    "lanes.settled": async () => {
      const waitingBefore = w.tasks.filter(
        (task) => task.id !== undefined && w.lanes.entryState(task.id) !== undefined,
      );
      for (let round = 0; w.lanes.activeCount > 0 && round < 20; round++) {
        expect(drains.every((drain) => !drain.done)).toBe(true);
        for (const task of w.running.values()) task.resolve(`${task.name} done`);
        await w.flush();
        w.checkSlots();
      }
      // Accepted work, waiting when the drain began, still ran.
      for (const task of waitingBefore) expect(task.caller.status).toBe("fulfilled");
    },
    "lanes.resume": async () => {
      w.lanes.resume();
      await w.flush();
    },
  };

  for (const step of path.steps) {
    const type = step.event.type as LaneSchedulerEvent["type"] | "xstate.init";
    if (type !== "xstate.init") await actions[type]();
    const state = String(step.state.value);
    expect(w.lanes.actor.getSnapshot().value).toBe(state);
    expect(w.lanes.isDraining).toBe(state !== "open");
    const probe = w.hold(`probe-${w.tasks.length}`, { session: "P", lane: "probe" });
    await w.flush();
    if (state === "open") {
      expect(probe.id).toBeDefined();
      expect(probe.caller.status).toBe("pending");
    } else {
      expect(probe.caller.reason).toBeInstanceOf(GatewayDrainingError);
      expect(probe.id).toBeUndefined();
    }
    if (state === "draining") expect(drains.at(-1)?.done).toBe(false);
    if (state === "drained") {
      expect(w.lanes.activeCount).toBe(0);
      expect(drains.every((drain) => drain.done)).toBe(true);
    }
    w.checkSlots();
  }
  // Every drain() resolves once active work ends, even one a later resume() overtook.
  for (let round = 0; w.lanes.activeCount > 0 && round < 20; round++) {
    for (const task of w.running.values()) task.resolve(`${task.name} done`);
    await w.flush();
  }
  expect(w.lanes.activeCount).toBe(0);
  expect(drains.every((drain) => drain.done)).toBe(true);
}

describe("laneSchedulerMachine paths replayed on the real scheduler", () => {
  const options = { events: SCHEDULER_EVENTS, serializeState: byValue, limit: 100 };
  const suites: Array<[string, Path<LaneSchedulerEvent>[]]> = [
    ["shortest paths", getShortestPaths(laneSchedulerMachine, options) as Path<LaneSchedulerEvent>[]],
    ["simple paths", getSimplePaths(laneSchedulerMachine, options) as Path<LaneSchedulerEvent>[]],
    ["every transition", transitionPaths(laneSchedulerMachine, SCHEDULER_EVENTS)],
    [
      "a drain, resume, drain tour",
      getPathsFromEvents(
        laneSchedulerMachine,
        ["lanes.drain", "lanes.resume", "lanes.drain", "lanes.settled", "lanes.resume", "lanes.drain"].map(
          (type) => ({ type }) as LaneSchedulerEvent,
        ),
        { serializeState: byValue },
      ) as Path<LaneSchedulerEvent>[],
    ],
  ];
  for (const [title, paths] of suites) {
    describe(title, () => {
      for (const path of paths) it(describePath(path), () => replaySchedulerPath(path));
    });
  }
});
