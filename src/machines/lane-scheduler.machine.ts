import { setup } from "xstate";

/**
 * Admission control of the lane scheduler.
 *
 * `open` admits new work. `lanes.drain` moves to `draining`: new work is refused, accepted work (running
 * and waiting) goes on, and the scheduler reports `lanes.settled` once nothing runs, which ends in
 * `drained`. `lanes.resume` opens the scheduler again from either state.
 *
 * The queues themselves live in purpose-built structures the scheduler owns (see src/lanes/): a machine
 * event costs microseconds, so the per-task hot path reads this machine's state but never sends to it.
 */
export type LaneSchedulerEvent =
  | { type: "lanes.drain" }
  | { type: "lanes.settled" }
  | { type: "lanes.resume" };

/**
 * @internal Exported for graph tests, diagrams and the testing kit; the gateway provides its actors.
 */
export const laneSchedulerMachine = setup({
  types: {} as { events: LaneSchedulerEvent },
}).createMachine({
  id: "laneScheduler",
  initial: "open",
  states: {
    open: {
      description: "New work is admitted.",
      on: { "lanes.drain": { target: "draining" } },
    },
    draining: {
      description: "New work is refused with GatewayDrainingError; accepted work runs to its end.",
      on: {
        "lanes.settled": { target: "drained", description: "No task is running any more." },
        "lanes.resume": { target: "open" },
      },
    },
    drained: {
      description: "Nothing runs and nothing new is admitted until resume().",
      on: { "lanes.resume": { target: "open" } },
    },
  },
});
