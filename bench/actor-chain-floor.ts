/**
 * The floor under "receive → first model call": the chain of actors docs/architecture.md puts between a message
 * and the model, with nothing else in it. A long-lived session actor takes the message and invokes a
 * lane-slot actor, which grants at once; the grant invokes a run actor (one per turn), which invokes a
 * model-call actor (`fromPromise`, for its abort signal) that calls the model. No policy, store, events,
 * lanes or context: trivial machines, so the figure is what XState itself costs on this machine for
 * that chain, measured the way the gateway bench measures Tiller (wall time from `send` to the model's
 * entry, each turn left to finish before the next message, sessions taking turns).
 *
 * Tiller's own figure minus this one is what Tiller adds on top of the actor structure it is built on.
 */
import { assign, createActor, fromCallback, fromPromise, setup } from "xstate";

const SESSIONS = 200;

interface FloorModel {
  complete(): Promise<string>;
}

function floorMachines(model: FloorModel) {
  const run = setup({
    types: {} as { input: { turn: number }; context: { turn: number; calls: number } },
    actors: { callModel: fromPromise<string, { turn: number }>(() => model.complete()) },
  }).createMachine({
    id: "floorRun",
    context: ({ input }) => ({ turn: input.turn, calls: 0 }),
    initial: "streaming",
    states: {
      streaming: {
        entry: assign({ calls: ({ context }) => context.calls + 1 }),
        invoke: {
          id: "callModel",
          src: "callModel",
          input: ({ context }) => ({ turn: context.turn }),
          onDone: { target: "done" },
        },
      },
      done: { type: "final" },
    },
  });
  return setup({
    types: {} as { context: { turns: number }; events: { type: "message" } | { type: "granted" } },
    actors: {
      run,
      laneSlot: fromCallback(({ sendBack }) => {
        sendBack({ type: "granted" });
      }),
    },
  }).createMachine({
    id: "floorSession",
    context: { turns: 0 },
    initial: "idle",
    states: {
      idle: {
        on: { message: { target: "turn", actions: assign({ turns: ({ context }) => context.turns + 1 }) } },
      },
      turn: {
        invoke: { id: "laneSlot", src: "laneSlot" },
        initial: "waitingForLane",
        states: {
          waitingForLane: { on: { granted: { target: "running" } } },
          running: {
            invoke: {
              id: "run",
              src: "run",
              input: ({ context }) => ({ turn: context.turns }),
              onDone: { target: "#floorSession.idle" },
            },
          },
        },
      },
    },
  });
}

/** Median (and p95) wall µs from a session actor's `send` to the model's entry, over `turns` turns. */
export async function actorChainFloor(
  turns: number,
  warmup: number,
): Promise<{ median: number; p95: number }> {
  const wall = (await actorChainFloorSamples(turns, warmup)).sort((a, b) => a - b);
  return { median: wall[wall.length >> 1]!, p95: wall[Math.floor(wall.length * 0.95)]! };
}

/** The wall µs of each of `turns` turns (after `warmup` unmeasured ones), in order. */
export async function actorChainFloorSamples(turns: number, warmup: number): Promise<number[]> {
  let enteredAt = Number.NaN;
  let waiter: (() => void) | null = null;
  const model: FloorModel = {
    async complete() {
      enteredAt = performance.now();
      const wake = waiter;
      waiter = null;
      wake?.();
      return "ok";
    },
  };
  const machine = floorMachines(model);
  const sessions = Array.from({ length: SESSIONS }, () => createActor(machine).start());
  const wall: number[] = [];
  for (let i = 0; i < warmup + turns; i++) {
    const called = new Promise<void>((resolve) => {
      waiter = resolve;
    });
    const session = sessions[i % SESSIONS]!;
    if (session.getSnapshot().value !== "idle") throw new Error("floor: a session was still in its turn");
    const t0 = performance.now();
    session.send({ type: "message" });
    await called;
    if (i >= warmup) wall.push((enteredAt - t0) * 1000);
    // The run ends and the session rests before the next message, as in the gateway bench.
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const session of sessions) session.stop();
  return wall;
}
