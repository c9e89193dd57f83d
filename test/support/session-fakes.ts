import { assign, fromCallback, fromPromise, setup } from "xstate";
import type { RunEvent, RunInput, RunOutput, runMachine } from "../../src/machines/run.machine.js";
import { sessionMachine } from "../../src/machines/session.machine.js";
import type {
  DeliverInput,
  DeliverOutput,
  PendingTurn,
  SessionEvent,
} from "../../src/machines/session.types.js";
import { type FakeRunContext, GRAPH_RUN_OUTPUT } from "./session-graph-cases.js";

// The session's invoked actors as fakes under the test's control (session-harness.ts replays paths
// on a session provided with them).
/** An actor call the test settles. */
export interface Deferred<TInput, TOutput> {
  input: TInput;
  resolve(value: TOutput): void;
  reject(error: unknown): void;
}

type FakeRunEvent = RunEvent | { type: "fake.finish" } | { type: "fake.crash" };

/** Stands in for the run: records what the session sends it and ends when the test says so. */
const fakeRun = setup({
  types: {} as { input: RunInput; context: FakeRunContext; events: FakeRunEvent; output: RunOutput },
}).createMachine({
  id: "fakeRun",
  context: ({ input }) => ({ input, steered: [], aborts: [] }),
  initial: "working",
  states: {
    working: {
      on: {
        "run.steer": {
          actions: assign({ steered: ({ context, event }) => [...context.steered, event.message] }),
        },
        "run.abort": {
          actions: assign({ aborts: ({ context, event }) => [...context.aborts, event.reason] }),
        },
        // The real run also drops the steering it holds back; this one holds none.
        "run.stop": {
          actions: assign({ aborts: ({ context, event }) => [...context.aborts, event.reason] }),
        },
        "fake.finish": { target: "finished" },
        "fake.crash": {
          actions: () => {
            throw new Error("the run crashed");
          },
        },
      },
    },
    finished: { type: "final" },
  },
  output: ({ context }) => {
    const aborted = context.aborts.length > 0;
    return {
      ...GRAPH_RUN_OUTPUT,
      runId: context.input.runId,
      status: aborted ? "aborted" : "done",
      final: aborted ? "" : "answer",
      answered: [...context.input.messages, ...context.steered].map((message) => message.id),
      abortReason: context.aborts[0] ?? null,
    };
  },
});

/** The actor calls of the harness being replayed; the fakes below report to it. */
let calls = new Map<string, Deferred<unknown, unknown>>();

/** Points the fakes at the calls map of the harness about to replay a path. */
export function reportCallsTo(map: Map<string, Deferred<unknown, unknown>>): void {
  calls = map;
}

function controlled<TOutput, TInput>(name: string) {
  return fromPromise<TOutput, TInput>(
    ({ input }) =>
      new Promise<TOutput>((resolve, reject) => {
        calls.set(name, { input, resolve: resolve as (value: unknown) => void, reject });
      }),
  );
}

export const provided = sessionMachine.provide({
  actors: {
    run: fakeRun as unknown as typeof runMachine,
    laneSlot: fromCallback<SessionEvent, { session: string; pending: PendingTurn }>(() => () => {}),
    deliver: controlled<DeliverOutput, DeliverInput>("deliver"),
    resetTranscript: controlled<void, { session: string }>("resetTranscript"),
  },
});
