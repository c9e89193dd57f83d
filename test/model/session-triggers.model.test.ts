import { describe, expect, it } from "vitest";
import { type AnyActorRef, assign, createActor, fromCallback, fromPromise, setup } from "xstate";
import { getShortestPaths } from "xstate/graph";
import type { RunInput, RunOutput, runMachine } from "../../src/machines/run.machine.js";
import { sessionMachine } from "../../src/machines/session.machine.js";
import type { DeliverInput, DeliverOutput, SessionEvent } from "../../src/machines/session.types.js";
import { failedOutput } from "../../src/machines/session-context.js";
import type { QueueMode, ResolvedQueueSetting } from "../../src/policy/queue-mode.js";

// Graph paths of the session machine with turns nobody typed: cron and heartbeat triggers next to user
// messages in steer and followup mode, the lane's grant and the results of the run and the delivery.
// Each shortest path is replayed on a real actor whose run is a fake that records what the session
// tells it; at every step: a heartbeat in a busy session is dropped, a user message pre-empts a
// heartbeat turn (the run is aborted as `preempted`), and a user message that waits while a scheduled
// turn runs is shown to that turn.

const setting = (mode: QueueMode): ResolvedQueueSetting => ({
  mode,
  modeSource: "inline",
  debounceMs: 500,
  cap: 20,
  drop: "summarize",
});
const triggered = (trigger: string) => ({
  type: "session.message" as const,
  message: { id: `g-${trigger}`, text: trigger, channel: "t", at: 0, trigger },
  setting: setting("followup"),
});
const typed = (mode: QueueMode) => ({
  type: "session.message" as const,
  message: { id: `g-${mode}`, text: mode, channel: "t", at: 0 },
  setting: setting(mode),
});
const RUN_INPUT: RunInput = {
  runId: "s#g",
  session: "s",
  kind: "turn",
  messages: [],
  preamble: [],
  history: [],
  olderUserTexts: [],
  recheck: { enabled: true, maxPasses: 1, minOverlap: 0.2, complaintPatterns: [] },
  tools: [],
  cancellableTools: [],
};
const DONE: RunOutput = { ...failedOutput("s#g", ""), status: "done", final: "answer", error: null };

type GraphEvent =
  | SessionEvent
  | { type: "xstate.done.actor.run"; output: RunOutput }
  | { type: "xstate.done.actor.deliver"; output: DeliverOutput };

const EVENTS: GraphEvent[] = [
  triggered("cron"),
  triggered("heartbeat"),
  typed("steer"),
  typed("followup"),
  { type: "lane.granted", runId: "s#g", input: RUN_INPUT },
  { type: "xstate.done.actor.run", output: DONE },
  { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
];

/** A run that records the session's commands and ends when told. */
const fakeRun = setup({
  types: {} as {
    input: RunInput;
    context: { input: RunInput; abortReason: string | null; noticed: string[] };
    output: RunOutput;
  },
}).createMachine({
  id: "fakeRun",
  context: ({ input }) => ({ input, abortReason: null, noticed: [] }),
  initial: "working",
  states: {
    working: {
      on: {
        // Like a run whose running tool cannot be cancelled: it ends (aborted) when told to finish.
        "run.abort": {
          actions: assign({ abortReason: ({ event }) => (event as unknown as { reason: string }).reason }),
        },
        "run.notice": {
          actions: assign({
            noticed: ({ context, event }) => [
              ...context.noticed,
              (event as unknown as { message: { id: string } }).message.id,
            ],
          }),
        },
        "fake.finish": "ended",
      },
    },
    ended: { type: "final" },
  },
  output: ({ context }) =>
    context.abortReason ? { ...DONE, status: "aborted", final: "", abortReason: context.abortReason } : DONE,
});

const deliveries: { resolve: ((output: DeliverOutput) => void) | null } = { resolve: null };
const provided = sessionMachine.provide({
  actors: {
    run: fakeRun as unknown as typeof runMachine,
    laneSlot: fromCallback(() => () => {}),
    deliver: fromPromise<DeliverOutput, DeliverInput>(
      () =>
        new Promise<DeliverOutput>((resolve) => {
          deliveries.resolve = resolve;
        }),
    ),
    resetTranscript: fromPromise<void, { session: string }>(() => new Promise(() => {})),
  } as never,
});

type Snapshot = ReturnType<ReturnType<typeof createActor<typeof sessionMachine>>["getSnapshot"]>;
const key = (snapshot: Snapshot) =>
  JSON.stringify([
    snapshot.value,
    snapshot.context.pending?.trigger ?? (snapshot.context.pending ? "user" : null),
    Math.min(snapshot.context.queue.length, 2),
    snapshot.context.lastDecision?.disposition ?? null,
  ]);

const paths = getShortestPaths(provided, {
  input: { key: "s" },
  events: EVENTS as never,
  serializeState: (snapshot: unknown) => key(snapshot as Snapshot),
  limit: 5000,
} as never);

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
const label = (event: GraphEvent) =>
  event.type === "session.message"
    ? (event.message.trigger ?? event.setting.mode)
    : event.type.replace("xstate.done.actor.", "").replace("lane.granted", "granted");

describe("session machine with triggered turns (graph paths)", () => {
  it("has paths to a pre-empted heartbeat and a dropped one", () => {
    const names = paths.map((path) => path.steps.map((step) => label(step.event as GraphEvent)).join(" → "));
    expect(names.length).toBeGreaterThan(10);
    expect(names.some((name) => /heartbeat → granted → (steer|followup)$/.test(name))).toBe(true);
    expect(names.some((name) => /. → heartbeat$/.test(name))).toBe(true);
  });

  for (const path of paths) {
    const steps = path.steps.slice(1);
    const name = steps.map((step) => label(step.event as GraphEvent)).join(" → ") || "(start)";
    it(name, async () => {
      deliveries.resolve = null;
      const actor = createActor(provided, { input: { key: "s" } });
      actor.start();
      let n = 0;
      for (const step of steps) {
        const event = step.event as GraphEvent;
        const before = actor.getSnapshot();
        const run = before.children.run as AnyActorRef | undefined;
        if (event.type === "session.message") {
          const message = { ...event.message, id: `m${++n}` };
          actor.send({ ...event, message });
          const after = actor.getSnapshot();
          const idle = before.value === "idle" && before.context.queue.length === 0;
          if (message.trigger === "heartbeat" && !idle) {
            expect(after.context.lastDecision).toMatchObject({
              messageId: message.id,
              disposition: "dropped",
            });
          }
          const inRun = before.matches({ turn: "running" });
          if (inRun && !message.trigger && before.context.pending?.trigger === "heartbeat") {
            expect(run?.getSnapshot().context.abortReason).toBe("preempted");
            expect(after.context.lastDecision?.disposition).toBe("interrupted");
          }
          if (
            inRun &&
            !message.trigger &&
            before.context.pending?.trigger === "cron" &&
            event.setting.mode === "followup"
          ) {
            expect(run?.getSnapshot().context.noticed).toContain(message.id);
          }
          if (message.trigger) {
            // A turn nobody typed never steers into, interrupts or joins another turn.
            expect(["started", "queued", "dropped"]).toContain(after.context.lastDecision?.disposition);
          }
        } else if (event.type === "xstate.done.actor.run") {
          run?.send({ type: "fake.finish" });
          await flush();
        } else if (event.type === "xstate.done.actor.deliver") {
          (deliveries.resolve as ((output: DeliverOutput) => void) | null)?.(event.output);
          await flush();
        } else actor.send(event);
        expect(key(actor.getSnapshot())).toBe(key(step.state as unknown as Snapshot));
      }
      actor.stop();
    });
  }
});
