import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { LaneEvent, TillerEventType } from "../../src/events.js";
import {
  createLaneScheduler,
  type LaneSchedulerOptions,
  type RunOptions,
} from "../../src/lanes/lane-scheduler.js";
import { deferred } from "./deferred.js";

// The lane scheduler tests' harness: a scheduler on a simulated clock whose tasks are held open by
// deferreds the test settles by hand, with every event it emits recorded.

/** What became of a caller's promise, readable without awaiting it. */
export interface Caller {
  status: "pending" | "fulfilled" | "rejected";
  value?: unknown;
  reason?: unknown;
}

export function track(promise: Promise<unknown>): Caller {
  const caller: Caller = { status: "pending" };
  promise.then(
    (value) => Object.assign(caller, { status: "fulfilled", value }),
    (reason) => Object.assign(caller, { status: "rejected", reason }),
  );
  return caller;
}

export function laneHarness(options: Omit<LaneSchedulerOptions, "clock" | "onEvent"> = {}) {
  const clock = new SimulatedClock();
  const events: LaneEvent[] = [];
  const lanes = createLaneScheduler({ ...options, clock, onEvent: (event) => events.push(event) });
  const started: string[] = [];
  /** Submits a task that records its start (and its signal) and runs until the test settles `gate`. */
  function hold(name: string, runOptions: RunOptions = {}) {
    const gate = deferred<string>();
    const task: { signal?: AbortSignal } = {};
    const before = events.length;
    const caller = track(
      lanes.run(runOptions, (signal) => {
        started.push(name);
        task.signal = signal;
        return gate.promise;
      }),
    );
    const enqueued = events.slice(before).find((event) => event.type === "lane.enqueued");
    return {
      name,
      gate,
      caller,
      task,
      id: enqueued?.type === "lane.enqueued" ? enqueued.entryId : undefined,
    };
  }
  const ofType = <K extends TillerEventType>(type: K) =>
    events.filter((event): event is Extract<LaneEvent, { type: K }> => event.type === type);
  const flush = () => clock.advance(0);
  return { clock, events, lanes, started, hold, ofType, flush };
}
