import type { ActorRefFrom } from "xstate";
import { EARLIER_FIRST, OTHER_SENDER, RESETTING, sessionSetup } from "./session.setup.js";
import { runInputFor } from "./session-context.js";

/**
 * One session: routes each inbound message by its resolved queue mode and runs one turn at a time.
 *
 * `idle` starts a turn for the first message. A `turn` holds the session's lane slot for its whole
 * life: `waitingForLane` (messages that steer join the turn before it starts), `running` (the run
 * actor; steer → into the run, followup/collect → the queue, interrupt → abort the run and run the
 * newest message next, rollback → the same, and the cut-off turn is hidden from later model calls,
 * reject → refused while the session is busy), `delivering` (the final goes out, a stranded final gets its marker and a
 * recovery). `next` picks what runs next: a collect burst waits in `collecting` for a quiet window,
 * anything else starts a turn, and an empty queue rests in `idle`. `/stop` aborts and clears;
 * `/new` also resets the transcript in `resetting`. Turns nobody typed (a message with a `trigger`):
 * a heartbeat runs only in an idle session and is dropped anywhere else, and a user message pre-empts a
 * heartbeat turn; a user message waiting for its own turn is shown to the background turn running now,
 * so that turn's final never ignores it.
 *
 * @internal Exported for graph tests, diagrams and the testing kit; the gateway provides its actors.
 */
export const sessionMachine = sessionSetup.createMachine({
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
            guard: "isHeartbeatWhileQueued",
            actions: "dropTriggered",
            description: "Nothing runs yet but work waits: the session is busy for a heartbeat.",
          },
          {
            guard: "editsQueued",
            actions: "replaceQueued",
            description: "An edit of a message that still waits replaces it in place.",
          },
          {
            guard: "isRejectWhileQueued",
            actions: "rejectBusy",
            description: "`reject`: work already waits, so the session is busy.",
          },
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
          {
            guard: "isHeartbeat",
            actions: "dropTriggered",
            description: "A heartbeat in a busy session is dropped.",
          },
          {
            guard: "editsQueued",
            actions: "replaceQueued",
            description: "An edit of a message that still waits replaces it in place.",
          },
          { guard: "isReject", actions: "rejectBusy", description: "`reject`: a burst waits to run." },
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
              actions: {
                type: "keepFailure",
                params: ({ event }) => ({ error: event.error, runId: event.runId }),
              },
              description: "The history could not be loaded: the turn fails and says so.",
            },
            "lane.rejected": {
              target: "#session.idle",
              actions: "requeuePending",
              description: "Cleared or draining: the turn's messages wait in the queue.",
            },
            "session.message": [
              {
                guard: "isHeartbeat",
                actions: "dropTriggered",
                description: "A heartbeat in a busy session is dropped.",
              },
              {
                guard: "preemptsHeartbeat",
                target: "#session.turn",
                reenter: true,
                actions: ["dropPendingHeartbeat", "startWith"],
                description: "A user message takes the session from a heartbeat that has not started.",
              },
              {
                guard: "editsTurn",
                actions: "replacePending",
                description: "An edit of a message of the turn about to start replaces it there.",
              },
              {
                guard: "editsQueued",
                actions: "replaceQueued",
                description: "An edit of a message that still waits replaces it in place.",
              },
              { guard: "isReject", actions: "rejectBusy", description: "`reject`: a turn is starting." },
              {
                guard: "isOtherSender",
                actions: { type: "enqueue", params: { waitsBehind: OTHER_SENDER } },
                description: "Another person's message never joins this turn: it runs as its own, next.",
              },
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
            input: ({ event, context }) => runInputFor(event, context),
            onDone: {
              target: "delivering",
              actions: { type: "keepOutput", params: ({ event }) => ({ output: event.output }) },
            },
            onError: {
              target: "delivering",
              actions: { type: "keepFailure", params: ({ event }) => ({ error: event.error }) },
            },
          },
          on: {
            "session.message": [
              {
                guard: "isHeartbeat",
                actions: "dropTriggered",
                description: "A heartbeat in a busy session is dropped.",
              },
              {
                guard: "preemptsHeartbeat",
                actions: "preemptRun",
                description: "A user message pre-empts a heartbeat turn: it is aborted and delivers nothing.",
              },
              {
                guard: "isOtherSender",
                actions: { type: "enqueue", params: { waitsBehind: OTHER_SENDER } },
                description:
                  "Another person's message neither steers nor interrupts this turn: it runs next.",
              },
              {
                guard: "editsTurn",
                actions: "steerIntoRun",
                description: "An edit of a message the running turn owns is steered in as a correction.",
              },
              {
                guard: "editsQueued",
                actions: "replaceQueued",
                description: "An edit of a message that still waits replaces it in place.",
              },
              {
                guard: "isReject",
                actions: "rejectBusy",
                description: "`reject`: the turn is not disturbed.",
              },
              { guard: "isSteer", actions: "steerIntoRun" },
              { guard: "isInterrupt", actions: "interruptRun" },
              {
                guard: "isRollback",
                actions: { type: "interruptRun", params: { rollback: true } },
                description: "As an interrupt, and the cut-off turn is hidden from every later model call.",
              },
              {
                guard: "noticedByRun",
                actions: ["enqueue", "noticeRun"],
                description:
                  "Waits for its own turn; the background turn running now sees it before its final goes out.",
              },
              { actions: "enqueue" },
            ],
            "session.stop": { actions: ["abortRun", "clearWaiting"] },
            "session.new": {
              target: "#session.resetting",
              actions: ["emitTurnCut", "clearWaiting", "dropPending"],
              description: "The started turn is cut off; its end is announced like any other.",
            },
            "lane.timeout": { actions: "abortRunForLaneTimeout" },
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
              messageIds: context.pending?.messages.map((message) => message.id) ?? [],
              output: context.lastOutput!,
              ...(context.pending?.recovery ? { recovery: context.pending.recovery } : {}),
              ...(context.pending?.rolledBack ? { rolledBack: true } : {}),
            }),
            onDone: {
              target: "#session.next",
              actions: [
                { type: "queueRecovery", params: ({ event }) => ({ output: event.output }) },
                "endTurn",
              ],
            },
            onError: { target: "#session.next", actions: "endTurn" },
          },
          on: {
            "session.message": [
              {
                guard: "isHeartbeat",
                actions: "dropTriggered",
                description: "A heartbeat in a busy session is dropped.",
              },
              {
                guard: "editsQueued",
                actions: "replaceQueued",
                description: "An edit of a message that still waits replaces it in place.",
              },
              { guard: "isReject", actions: "rejectBusy", description: "`reject`: a reply is going out." },
              { actions: "enqueue", description: "Too late for this turn: a follow-up." },
            ],
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
      on: {
        "session.message": [
          {
            guard: "isHeartbeat",
            actions: "dropTriggered",
            description: "A heartbeat in a busy session is dropped.",
          },
          {
            guard: "editsQueued",
            actions: "replaceQueued",
            description: "An edit of a message that still waits replaces it in place.",
          },
          { guard: "isReject", actions: "rejectBusy", description: "`reject`: `/new` is still resetting." },
          { actions: { type: "enqueue", params: { waitsBehind: RESETTING } } },
        ],
      },
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
