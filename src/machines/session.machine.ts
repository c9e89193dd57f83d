import {
  type ActorRefFrom,
  assign,
  emit,
  enqueueActions,
  fromCallback,
  fromPromise,
  sendTo,
  setup,
} from "xstate";
import type { OwnedMessage } from "../turn.js";
import { type RunEvent, type RunOutput, runMachine } from "./run.machine.js";
import type {
  DeliverInput,
  DeliverOutput,
  PendingTurn,
  QueueItem,
  SessionContext,
  SessionEmitted,
  SessionEvent,
  SessionInput,
} from "./session.types.js";
import { byArrival, decision, failedOutput } from "./session-context.js";
import { admitToQueue, requeueLeftover, takeNextTurn } from "./session-queue.js";

/** Where a message waits when it cannot join the running turn; the ack says it. */
const EARLIER_FIRST = "messages sent earlier are answered first; this one is answered after them";
const RESETTING = "a fresh conversation is being started; this is answered in it";
const RESENDING = "an earlier reply that did not reach you is being resent first; this is answered next";
const STOPPED = "stopped by /stop";
const INTERRUPTED = "interrupted by message";

/**
 * One session: routes each inbound message by its resolved queue mode and runs one turn at a time.
 *
 * `idle` starts a turn for the first message. A `turn` holds the session's lane slot for its whole
 * life: `waitingForLane` (messages that steer join the turn before it starts), `running` (the run
 * actor; steer → into the run, followup/collect → the queue, interrupt → abort the run and run the
 * newest message next), `delivering` (the final goes out, a stranded final gets its marker and a
 * recovery). `next` picks what runs next: a collect burst waits in `collecting` for a quiet window,
 * anything else starts a turn, and an empty queue rests in `idle`. `/stop` aborts and clears;
 * `/new` also resets the transcript in `resetting`.
 */
export const sessionMachine = setup({
  types: {} as {
    input: SessionInput;
    context: SessionContext;
    events: SessionEvent;
    emitted: SessionEmitted;
  },
  actors: {
    run: runMachine,
    laneSlot: fromCallback<SessionEvent, { session: string; pending: PendingTurn }>(() => {
      throw new Error("laneSlot is provided by the gateway");
    }),
    deliver: fromPromise<DeliverOutput, DeliverInput>(async () => {
      throw new Error("deliver is provided by the gateway");
    }),
    resetTranscript: fromPromise<void, { session: string }>(async () => {
      throw new Error("resetTranscript is provided by the gateway");
    }),
  },
  guards: {
    // A recovery turn only resends an earlier reply: a message steered into it would never be answered.
    isSteer: ({ event, context }) =>
      event.type === "session.message" && event.setting.mode === "steer" && context.pending?.kind === "turn",
    isInterrupt: ({ event }) => event.type === "session.message" && event.setting.mode === "interrupt",
    joinsPendingTurn: ({ event, context }) =>
      event.type === "session.message" &&
      context.pending?.kind === "turn" &&
      (event.setting.mode === "steer" || event.setting.mode === "interrupt"),
    headIsCollect: ({ context }) => context.queue[0]?.kind === "collect",
    hasQueued: ({ context }) => context.queue.length > 0,
    isResend: ({ context }) => context.pending?.recovery?.deliveryMode === "automatic",
    isCollectMessage: ({ event }) => event.type === "session.message" && event.setting.mode === "collect",
  },
  actions: {
    startWith: assign(({ context, event }) => {
      if (event.type !== "session.message") return {};
      return {
        pending: { kind: "turn" as const, messages: [event.message], summaries: context.summaries },
        summaries: [],
        lastDecision: decision(event, "started"),
      };
    }),
    joinPending: assign(({ context, event }) => {
      if (event.type !== "session.message" || !context.pending) return {};
      return {
        pending: { ...context.pending, messages: [...context.pending.messages, event.message] },
        lastDecision: decision(event, "steered", "joins the turn that is about to start"),
      };
    }),
    enqueue: enqueueActions(({ context, event, enqueue }, params?: { waitsBehind?: string }) => {
      if (event.type !== "session.message") return;
      const waitsBehind =
        params?.waitsBehind ?? (context.pending?.kind === "recovery" ? RESENDING : undefined);
      const result = admitToQueue(
        context.queue,
        context.summaries,
        event.message,
        event.setting,
        waitsBehind,
      );
      for (const drop of result.dropped) enqueue.emit({ type: "message.dropped", ...drop });
      enqueue.assign({
        queue: result.queue,
        summaries: result.summaries,
        collectDebounceMs:
          event.setting.mode === "collect" ? event.setting.debounceMs : context.collectDebounceMs,
        lastDecision: decision(
          event,
          result.rejected ? "rejected" : result.collected ? "collected" : "queued",
          result.reason,
          result.dropped.map((drop) => drop.messageId),
        ),
      });
    }),
    steerIntoRun: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "session.message") return;
      enqueue.sendTo("run", { type: "run.steer", message: event.message } as RunEvent);
      enqueue.assign({
        // The turn owns it now: persisted with the turn, so a crash before it is stored re-runs it.
        ...(context.pending
          ? { pending: { ...context.pending, messages: [...context.pending.messages, event.message] } }
          : {}),
        lastDecision: { ...decision(event, "steered"), ...(context.runId ? { runId: context.runId } : {}) },
      });
    }),
    interruptRun: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "session.message") return;
      // Everything that waited folds into the interrupting turn, so no accepted message is lost.
      const folded: OwnedMessage[] = [];
      const kept: QueueItem[] = [];
      for (const item of context.queue) {
        if (item.kind === "recovery") kept.push(item);
        else folded.push(...item.messages);
      }
      const messages = [...folded, event.message];
      enqueue.assign({
        queue: [{ kind: "followup", messages }, ...kept],
        lastDecision: decision(event, "interrupted"),
      });
      enqueue.sendTo("run", {
        type: "run.abort",
        reason: `${INTERRUPTED} ${event.message.id}`,
      } as RunEvent);
    }),
    abortRun: enqueueActions(({ context, enqueue }) => {
      // The run drops the steering it still holds back (never shown to the model) and says so. The
      // stopped turn owns nothing more: a restart does not run it again, and only messages steered after
      // the stop come back later.
      enqueue.sendTo("run", { type: "run.stop", reason: STOPPED } as RunEvent);
      if (context.pending) enqueue.assign({ pending: { ...context.pending, messages: [] } });
    }),
    clearWaiting: enqueueActions(({ context, enqueue }) => {
      for (const item of context.queue) {
        if (item.kind === "recovery") continue;
        for (const message of item.messages) {
          enqueue.emit({ type: "message.dropped", messageId: message.id, reason: "cleared by /stop" });
        }
      }
      enqueue.assign({ queue: context.queue.filter((item) => item.kind === "recovery"), summaries: [] });
    }),
    dropPending: enqueueActions(({ context, enqueue }) => {
      for (const message of context.pending?.messages ?? []) {
        enqueue.emit({ type: "message.dropped", messageId: message.id, reason: "cleared by /stop" });
      }
      enqueue.assign({ pending: null });
    }),
    endTurn: assign({ pending: null }),
    takeNext: assign(({ context }) => {
      const { pending, queue, summaries } = takeNextTurn(context.queue, context.summaries);
      return { pending, queue, summaries };
    }),
    beginRun: assign(({ context, event }) => ({
      turnSeq: context.turnSeq + 1,
      // The gateway names runs (unique across restarts); a bare machine numbers its turns.
      runId:
        (event.type === "lane.granted" ? event.runId : undefined) ?? `${context.key}#${context.turnSeq + 1}`,
    })),
    emitTurnStarted: emit(({ context }) => ({
      type: "turn.started" as const,
      runId: context.runId ?? "",
      kind: context.pending?.kind ?? "turn",
      messageIds: context.pending?.messages.map((message) => message.id) ?? [],
    })),
    keepOutput: enqueueActions(({ event, context, enqueue }) => {
      const output = (event as unknown as { output: RunOutput }).output;
      // Messages the run took too late to show to the model come back as a follow-up (by arrival),
      // except those a /stop already dropped (no longer owned by the turn).
      const owned = new Set(context.pending?.messages.map((message) => message.id));
      const kept =
        output.status === "aborted"
          ? output.leftover.filter((message) => owned.has(message.id))
          : output.leftover;
      const leftover = new Set(kept.map((message) => message.id));
      const head = context.queue[0];
      const interrupted = output.status === "aborted" && output.abortReason?.startsWith(INTERRUPTED) === true;
      enqueue.assign({
        lastOutput: output,
        // An interrupted run's held-back steering waited too: it folds into the interrupting turn.
        queue:
          interrupted && head?.kind === "followup" && kept.length > 0
            ? [{ ...head, messages: byArrival([...kept, ...head.messages]) }, ...context.queue.slice(1)]
            : requeueLeftover(context.queue, kept),
        ...(context.pending && leftover.size > 0
          ? {
              pending: {
                ...context.pending,
                messages: context.pending.messages.filter((message) => !leftover.has(message.id)),
              },
            }
          : {}),
      });
    }),
    keepFailure: assign(({ event, context }) => ({
      lastOutput: failedOutput(
        (event.type === "lane.granted" ? event.runId : undefined) ?? context.runId ?? "",
        (event as unknown as { error: unknown }).error,
      ),
    })),
    resendOutput: assign(({ context }) => ({
      // A stranded final in automatic mode is resent as it was: no model call.
      lastOutput: {
        ...failedOutput(context.runId ?? "", ""),
        status: "done" as const,
        error: null,
        final: context.pending?.recovery?.text ?? "",
      },
    })),
    emitTurnEnded: emit(({ context }) => ({
      type: "turn.ended" as const,
      runId: context.runId ?? "",
      status: context.lastOutput?.status ?? "failed",
    })),
    emitTurnCut: emit(({ context }) => ({
      type: "turn.ended" as const,
      runId: context.runId ?? "",
      status: "aborted",
    })),
    queueRecovery: assign(({ event, context }) => {
      const output = (event as unknown as { output: DeliverOutput }).output;
      return output.recovery ? { queue: [output.recovery, ...context.queue] } : {};
    }),
    requeuePending: enqueueActions(({ context, event, enqueue }) => {
      if (!context.pending) return;
      const reason = event.type === "lane.rejected" ? event.reason : "lane unavailable";
      enqueue.emit({
        type: "turn.requeued",
        messageIds: context.pending.messages.map((message) => message.id),
        reason,
      });
      const item: QueueItem | undefined =
        context.pending.kind === "recovery" && context.pending.recovery
          ? context.pending.recovery
          : context.pending.messages.length > 0
            ? { kind: "followup", messages: context.pending.messages }
            : undefined;
      enqueue.assign({
        queue: item ? [item, ...context.queue] : context.queue,
        summaries: [...context.pending.summaries, ...context.summaries],
        pending: null,
      });
    }),
  },
  delays: {
    collectWindow: ({ context }) => context.collectDebounceMs,
  },
}).createMachine({
  id: "session",
  context: ({ input }) => ({
    key: input.key,
    pending: input.restored?.pending ?? null,
    queue: input.restored?.queue ?? [],
    summaries: input.restored?.summaries ?? [],
    turnSeq: input.turnSeq ?? 0,
    runId: null,
    lastDecision: null,
    lastOutput: null,
    collectDebounceMs: 500,
  }),
  initial: "next",
  on: {
    "session.new": { target: ".resetting", actions: ["clearWaiting", "dropPending"] },
  },
  states: {
    idle: {
      description: "No turn runs and nothing waits.",
      on: {
        "session.message": [
          {
            guard: "hasQueued",
            target: "next",
            actions: { type: "enqueue", params: { waitsBehind: EARLIER_FIRST } },
            description: "Work requeued by a cleared lane runs first; the new message waits behind it.",
          },
          { target: "turn", actions: "startWith" },
        ],
        "session.resume": { target: "next", description: "Work requeued while draining runs again." },
        "session.stop": {},
      },
    },
    collecting: {
      description: "A collect burst waits for a quiet window; each new collect message restarts it.",
      after: {
        collectWindow: {
          target: "turn",
          actions: "takeNext",
          description:
            "The burst becomes one turn at once; `next` would look at the queue again and lose it.",
        },
      },
      on: {
        "session.message": [
          { guard: "isCollectMessage", target: "collecting", reenter: true, actions: "enqueue" },
          { actions: { type: "enqueue", params: { waitsBehind: EARLIER_FIRST } } },
        ],
        "session.stop": { target: "idle", actions: "clearWaiting" },
        "session.resume": {},
      },
    },
    turn: {
      description: "Holds the session's lane slot from request to delivery.",
      invoke: {
        id: "laneSlot",
        src: "laneSlot",
        input: ({ context }) => ({ session: context.key, pending: context.pending! }),
      },
      initial: "waitingForLane",
      states: {
        waitingForLane: {
          description:
            "Asked the lane scheduler for a slot; once granted, the run's history loads. Steering messages join this turn.",
          on: {
            "lane.granted": [
              { guard: "isResend", target: "delivering", actions: ["beginRun", "resendOutput"] },
              { target: "running", actions: "beginRun" },
            ],
            "turn.prepareFailed": {
              target: "delivering",
              actions: "keepFailure",
              description: "The history could not be loaded: the turn fails and says so.",
            },
            "lane.rejected": {
              target: "#session.idle",
              actions: "requeuePending",
              description: "Cleared or draining: the turn's messages wait in the queue.",
            },
            "session.message": [
              { guard: "joinsPendingTurn", actions: "joinPending" },
              { actions: "enqueue" },
            ],
            "session.stop": { target: "#session.idle", actions: ["dropPending", "clearWaiting"] },
          },
        },
        running: {
          description: "The run actor works; messages are routed by their queue mode.",
          entry: "emitTurnStarted",
          invoke: {
            id: "run",
            src: "run",
            input: ({ event, context }) => {
              const prepared = (event as Extract<SessionEvent, { type: "lane.granted" }>).input!;
              // Messages that joined while the run was being prepared belong to it too.
              return { ...prepared, messages: context.pending?.messages ?? prepared.messages };
            },
            onDone: { target: "delivering", actions: "keepOutput" },
            onError: { target: "delivering", actions: "keepFailure" },
          },
          on: {
            "session.message": [
              { guard: "isSteer", actions: "steerIntoRun" },
              { guard: "isInterrupt", actions: "interruptRun" },
              { actions: "enqueue" },
            ],
            "session.stop": { actions: ["abortRun", "clearWaiting"] },
            "session.new": {
              target: "#session.resetting",
              actions: ["emitTurnCut", "clearWaiting", "dropPending"],
              description: "The started turn is cut off; its end is announced like any other.",
            },
            "lane.timeout": {
              actions: sendTo("run", {
                type: "run.abort",
                reason: "the turn ran past the lane timeout",
              } as RunEvent),
            },
          },
        },
        delivering: {
          description: "The final goes to the channel; a stranded final gets its marker and recovery.",
          entry: "emitTurnEnded",
          invoke: {
            id: "deliver",
            src: "deliver",
            input: ({ context }) => ({
              session: context.key,
              kind: context.pending?.kind ?? "turn",
              output: context.lastOutput!,
              ...(context.pending?.recovery ? { recovery: context.pending.recovery } : {}),
            }),
            onDone: { target: "#session.next", actions: ["queueRecovery", "endTurn"] },
            onError: { target: "#session.next", actions: "endTurn" },
          },
          on: {
            "session.message": { actions: "enqueue", description: "Too late for this turn: a follow-up." },
            "session.stop": { actions: "clearWaiting" },
          },
        },
      },
    },
    resetting: {
      description: "`/new`: the transcript starts a new lifecycle revision.",
      invoke: {
        id: "resetTranscript",
        src: "resetTranscript",
        input: ({ context }) => ({ session: context.key }),
        onDone: { target: "next" },
        onError: { target: "next" },
      },
      on: { "session.message": { actions: { type: "enqueue", params: { waitsBehind: RESETTING } } } },
    },
    next: {
      description: "Chooses what runs next.",
      always: [
        { guard: "headIsCollect", target: "collecting" },
        { guard: "hasQueued", target: "turn", actions: "takeNext" },
        { target: "idle" },
      ],
    },
  },
});

export type SessionActorRef = ActorRefFrom<typeof sessionMachine>;
