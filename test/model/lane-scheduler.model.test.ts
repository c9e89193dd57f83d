import { describe, expect, it } from "vitest";
import type { AnyStateMachine, EventObject } from "xstate";
import {
  adjacencyMapToArray,
  getAdjacencyMap,
  getPathsFromEvents,
  getShortestPaths,
  getSimplePaths,
  type StatePath,
} from "xstate/graph";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { GatewayDrainingError, LaneClearedError, LaneTimeoutError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import { createLaneScheduler, type RunOptions } from "../../src/lanes/lane-scheduler.js";
import { type LaneEntryEvent, laneEntryMachine } from "../../src/machines/lane-entry.machine.js";
import { type LaneSchedulerEvent, laneSchedulerMachine } from "../../src/machines/lane-scheduler.machine.js";
import { deferred } from "../support/deferred.js";

// Graph tests: every shortest and every simple path of laneEntryMachine and laneSchedulerMachine is
// replayed against the real scheduler on a simulated clock. Each machine event maps to a real action
// (finish a blocker, settle the task, advance the clock, clear, abort, drain, resume) and after every
// step the scheduler must be in the path's state, with invariants 1-3 and 7-9 of docs/architecture.md holding.

type Path<E extends EventObject> = StatePath<ReturnType<AnyStateMachine["transition"]>, E>;

const byValue = (snapshot: { value: unknown }) => JSON.stringify(snapshot.value);

interface Task {
  name: string;
  id: number | undefined;
  lane: string;
  session: string | undefined;
  started: boolean;
  gateSettled: boolean;
  resolve(value: string): void;
  reject(reason: unknown): void;
  signal?: AbortSignal;
  caller: { status: "pending" | "fulfilled" | "rejected"; value?: unknown; reason?: unknown };
}

/** A scheduler on a simulated clock that records tasks, starts, ends and invariant violations. */
function world(capacity: Record<string, number>) {
  const clock = new SimulatedClock();
  const events: TillerEvent[] = [];
  const tasks: Task[] = [];
  const startOrder: string[] = [];
  const violations: string[] = [];
  const running = new Map<number, Task>();
  const byId = new Map<number, Task>();
  let submitting: Task | undefined;
  const lanes = createLaneScheduler({
    clock,
    capacity,
    onEvent: (event) => {
      events.push(event);
      // lane.enqueued comes before the task can start, so the id is known by lane.started.
      if (event.type === "lane.enqueued" && submitting) {
        submitting.id = event.entryId as number;
        byId.set(submitting.id, submitting);
      }
      const task = "entryId" in event ? byId.get(event.entryId) : undefined;
      if (event.type === "lane.started" && task) {
        running.set(task.id!, task);
        const sameSession = [...running.values()].filter((t) => t.session && t.session === task.session);
        if (sameSession.length > 1) violations.push(`invariant 1: session ${task.session} runs two tasks`);
        const inLane = [...running.values()].filter((t) => t.lane === task.lane).length;
        if (inLane > (lanes.snapshot().lanes[task.lane]?.capacity ?? 1)) {
          violations.push(`invariant 2: lane ${task.lane} runs ${inLane} tasks`);
        }
      }
      if (event.type === "lane.ended" && task) running.delete(task.id!);
    },
  });

  function hold(name: string, options: RunOptions): Task {
    const gate = deferred<string>();
    const task: Task = {
      name,
      id: undefined,
      lane: options.lane ?? "main",
      session: options.session,
      started: false,
      gateSettled: false,
      resolve: (value) => {
        task.gateSettled = true;
        gate.resolve(value);
      },
      reject: (reason) => {
        task.gateSettled = true;
        gate.reject(reason);
      },
      caller: { status: "pending" },
    };
    submitting = task;
    lanes
      .run(options, (signal) => {
        task.started = true;
        task.signal = signal;
        startOrder.push(name);
        return gate.promise;
      })
      .then(
        (value) => Object.assign(task.caller, { status: "fulfilled", value }),
        (reason) => Object.assign(task.caller, { status: "rejected", reason }),
      );
    submitting = undefined;
    tasks.push(task);
    return task;
  }

  const flush = () => clock.advance(0);
  const ofType = (type: string) => events.filter((event) => event.type === type);

  /** Lane active counts equal the running tasks (waiting entries hold no slot) and never pass capacity. */
  function checkSlots(): void {
    for (const [name, lane] of Object.entries(lanes.snapshot().lanes)) {
      if (name.startsWith("session:")) {
        expect(lane.active, `${name} runs at most one task`).toBeLessThanOrEqual(1);
        continue;
      }
      const runningHere = [...running.values()].filter((task) => task.lane === name).length;
      expect(lane.active, `lane ${name}: active equals its running tasks`).toBe(runningHere);
    }
    expect(violations).toEqual([]);
  }

  /** Invariant 9 at the end of every path: drain refuses new work and resolves when active work ends. */
  async function drainAndFinish(): Promise<void> {
    const drained = { done: false };
    void lanes.drain().then(() => {
      drained.done = true;
    });
    const probe = hold("probe-after-drain", { session: "S" });
    await flush();
    expect(probe.caller.reason).toBeInstanceOf(GatewayDrainingError);
    expect(probe.id).toBeUndefined();
    for (let round = 0; lanes.activeCount > 0 && round < 10; round++) {
      expect(drained.done, "drain waits for active work").toBe(false);
      for (const task of running.values()) task.resolve(`${task.name} finished`);
      await flush();
      checkSlots();
    }
    expect(lanes.activeCount).toBe(0);
    expect(drained.done).toBe(true);
    expect(lanes.actor.getSnapshot().value).toBe("drained");
  }

  return {
    clock,
    lanes,
    tasks,
    events,
    startOrder,
    running,
    hold,
    flush,
    ofType,
    checkSlots,
    drainAndFinish,
  };
}

const ENTRY_EVENTS = laneEntryMachine.events.map((type) => ({ type })) as LaneEntryEvent[];
const SCHEDULER_EVENTS = laneSchedulerMachine.events.map((type) => ({ type })) as LaneSchedulerEvent[];

function describePath(path: Path<EventObject>): string {
  return path.steps
    .map(
      (step) =>
        (step.event.type.startsWith("xstate.") ? "" : `${step.event.type} → `) + String(step.state.value),
    )
    .join(" → ");
}

/** Shortest paths to every state, then each transition appended to the shortest path to its source. */
function transitionPaths<E extends EventObject>(machine: AnyStateMachine, events: E[]): Path<E>[] {
  const options = { events, serializeState: byValue, limit: 1_000 };
  const shortest = getShortestPaths(machine, options) as Path<E>[];
  const edges = adjacencyMapToArray(getAdjacencyMap(machine, options));
  return edges
    .filter((edge) => byValue(edge.state) !== byValue(edge.nextState))
    .map((edge) => {
      const prefix = shortest.find((path) => byValue(path.state) === byValue(edge.state))!;
      return {
        state: edge.nextState,
        weight: prefix.weight + 1,
        steps: [...prefix.steps, { event: edge.event as E, state: edge.nextState }],
      } as Path<E>;
    });
}

// (a) One task's life -------------------------------------------------------------------------------

/**
 * The entry under test ("subject", session S, lane L of capacity 1, normal priority, 100 ms timeout) is
 * held in waitingForSession by a running task of S in another lane, and in waitingForSlot by a running
 * task in L. A background "witness" waits in L too: it must never start ahead of the subject (invariant 3).
 */
async function replayEntryPath(path: Path<LaneEntryEvent>): Promise<void> {
  const w = world({ L: 1, side: 1 });
  const sessionBlocker = w.hold("session-blocker", { session: "S", lane: "side" });
  const laneBlocker = w.hold("lane-blocker", { lane: "L" });
  const witness = w.hold("witness", { lane: "L", priority: "background" });
  const controller = new AbortController();
  const subject = w.hold("subject", { session: "S", lane: "L", timeoutMs: 100, signal: controller.signal });
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

describe("laneEntryMachine paths replayed on the real scheduler", () => {
  const options = { events: ENTRY_EVENTS, serializeState: byValue, limit: 1_000 };
  const shortest = getShortestPaths(laneEntryMachine, options) as Path<LaneEntryEvent>[];
  const simple = getSimplePaths(laneEntryMachine, options) as Path<LaneEntryEvent>[];

  it("the graph reaches every state of the entry lifecycle", () => {
    const reached = new Set(shortest.map((path) => String(path.state.value)));
    expect([...reached].sort()).toEqual(Object.keys(laneEntryMachine.states).sort());
    expect(simple.length).toBeGreaterThan(shortest.length);
  });

  describe("shortest paths", () => {
    for (const path of shortest) it(describePath(path), () => replayEntryPath(path));
  });

  describe("simple paths", () => {
    for (const path of simple) it(describePath(path), () => replayEntryPath(path));
  });
});

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
