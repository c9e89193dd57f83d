import { expect } from "vitest";
import type { AnyStateMachine, EventObject } from "xstate";
import { adjacencyMapToArray, getAdjacencyMap, getShortestPaths, type StatePath } from "xstate/graph";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { GatewayDrainingError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import { createLaneScheduler, type RunOptions } from "../../src/lanes/lane-scheduler.js";
import { type LaneEntryEvent, laneEntryMachine } from "../../src/machines/lane-entry.machine.js";
import { type LaneSchedulerEvent, laneSchedulerMachine } from "../../src/machines/lane-scheduler.machine.js";
import { deferred } from "./deferred.js";

// The lane machines' graph tests share this: a scheduler on a simulated clock that records tasks,
// starts, ends and invariant violations, and the paths (every transition) the graphs are walked by.

export type Path<E extends EventObject> = StatePath<ReturnType<AnyStateMachine["transition"]>, E>;

export const byValue = (snapshot: { value: unknown }) => JSON.stringify(snapshot.value);

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
export function world(capacity: Record<string, number>) {
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

export const ENTRY_EVENTS = laneEntryMachine.events.map((type) => ({ type })) as LaneEntryEvent[];
export const SCHEDULER_EVENTS = laneSchedulerMachine.events.map((type) => ({ type })) as LaneSchedulerEvent[];

export function describePath(path: Path<EventObject>): string {
  return path.steps
    .map(
      (step) =>
        (step.event.type.startsWith("xstate.") ? "" : `${step.event.type} → `) + String(step.state.value),
    )
    .join(" → ");
}

/** Shortest paths to every state, then each transition appended to the shortest path to its source. */
export function transitionPaths<E extends EventObject>(machine: AnyStateMachine, events: E[]): Path<E>[] {
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
