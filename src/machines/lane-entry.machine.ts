import { setup } from "xstate";

/**
 * The life of one task in the lane scheduler: the specification that the scheduler's entry records
 * follow, and the graph that the lane tests walk.
 *
 * A task with a session first waits for its session lane (one task per session at a time). It then
 * waits for a slot in its workload lane (by priority, then arrival), runs, and ends done, failed or
 * timed out. While it waits it can be cleared or aborted; once it runs only its own end or the timeout
 * settles it. A task without a session, or whose session is free, passes the first wait at once.
 */
export type LaneEntryEvent =
  | { type: "entry.sessionFree" }
  | { type: "entry.slotFree" }
  | { type: "entry.succeeded" }
  | { type: "entry.failed" }
  | { type: "entry.timeout" }
  | { type: "entry.cleared" }
  | { type: "entry.aborted" };

/**
 * @internal Exported for graph tests, diagrams and the testing kit; the gateway provides its actors.
 */
export const laneEntryMachine = setup({
  types: {} as { events: LaneEntryEvent },
}).createMachine({
  id: "laneEntry",
  initial: "waitingForSession",
  states: {
    waitingForSession: {
      description: "Behind the running task of its session; holds no workload slot.",
      on: {
        "entry.sessionFree": { target: "waitingForSlot" },
        "entry.cleared": { target: "cleared" },
        "entry.aborted": { target: "aborted" },
      },
    },
    waitingForSlot: {
      description: "First in its session; waits for a workload-lane slot by priority, then arrival.",
      on: {
        "entry.slotFree": { target: "running" },
        "entry.cleared": { target: "cleared" },
        "entry.aborted": { target: "aborted" },
      },
    },
    running: {
      description: "Holds a workload slot and its session lane; receives the abort signal.",
      on: {
        "entry.succeeded": { target: "done" },
        "entry.failed": { target: "failed" },
        "entry.timeout": {
          target: "timedOut",
          description: "The slot is freed at once; a late result is dropped.",
        },
      },
    },
    done: { type: "final", description: "The caller received the result." },
    failed: { type: "final", description: "The caller received the task's error." },
    timedOut: { type: "final", description: "The caller received LaneTimeoutError." },
    cleared: { type: "final", description: "The caller received LaneClearedError; the task never ran." },
    aborted: { type: "final", description: "The caller received the signal's reason; the task never ran." },
  },
});

export type LaneEntryState =
  | "waitingForSession"
  | "waitingForSlot"
  | "running"
  | "done"
  | "failed"
  | "timedOut"
  | "cleared"
  | "aborted";
