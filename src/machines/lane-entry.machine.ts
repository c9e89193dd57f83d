import { setup } from "xstate";

/**
 * The life of one task in the lane scheduler: the specification that the scheduler's entry records
 * follow, and the graph that the lane tests walk.
 *
 * A task with a session first waits for its session lane (one task per session at a time). It then
 * waits for a slot in its workload lane (by priority, then arrival), runs, and ends done, failed or
 * timed out. While it waits it can be cleared or aborted; once it runs only its own end or the timeout
 * settles it. A task without a session, or whose session is free, passes the first wait at once.
 * At its deadline (`entry.timeout`) a task with an abort grace is told to stop and keeps its slot in
 * `stopping` until it settles or the grace runs out (`entry.graceExpired`); one without frees it at once.
 */
export type LaneEntryEvent =
  | { type: "entry.sessionFree" }
  | { type: "entry.slotFree" }
  | { type: "entry.succeeded" }
  | { type: "entry.failed" }
  | { type: "entry.timeout" }
  | { type: "entry.graceExpired" }
  | { type: "entry.cleared" }
  | { type: "entry.aborted" };

/**
 * @internal Exported for graph tests, diagrams and the testing kit; the gateway provides its actors.
 */
export const laneEntryMachine = setup({
  types: {} as {
    events: LaneEntryEvent;
    context: { abortGraceMs: number };
    input: { abortGraceMs?: number } | undefined;
  },
  guards: {
    hasAbortGrace: ({ context }) => context.abortGraceMs > 0,
  },
}).createMachine({
  id: "laneEntry",
  context: ({ input }) => ({ abortGraceMs: input?.abortGraceMs ?? 0 }),
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
        "entry.timeout": [
          {
            guard: "hasAbortGrace",
            target: "stopping",
            description: "The signal aborts; the slot stays held while the task stops.",
          },
          {
            target: "timedOut",
            description: "The signal aborts and the slot is freed at once; a late result is dropped.",
          },
        ],
      },
    },
    stopping: {
      description:
        "Past its deadline, its signal aborted: holds its slot until it settles or the abort grace runs out.",
      on: {
        "entry.succeeded": { target: "timedOut", description: "It stopped in time: the slot is freed." },
        "entry.failed": { target: "timedOut", description: "It stopped in time: the slot is freed." },
        "entry.graceExpired": {
          target: "timedOut",
          description: "It did not stop: the slot is freed anyway and lane.abortGraceExceeded reports it.",
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
  | "stopping"
  | "done"
  | "failed"
  | "timedOut"
  | "cleared"
  | "aborted";
