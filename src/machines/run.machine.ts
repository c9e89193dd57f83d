import type { ActorRefFrom } from "xstate";
import { turnSenders } from "../policy/sender.js";
import { runSetup } from "./run.setup.js";
import { callModelInput, draftFacts, messageSends, startJournal } from "./run-context.js";

// The run's input, context, events and output, for its users.
export type * from "./run.types.js";

/**
 * One turn of one session.
 *
 * A run starts in `streaming`, which calls the model with the history and this turn's journal (the
 * session creates a run when its first call is due: no step before it). A reply with tool calls moves
 * to `toolBatch`, which runs them one at a time and goes back to `streaming`. A steering message
 * (`run.steer`) waits in a buffer: it joins the journal on the way back into `streaming`, before the
 * next model call, and the calls of the batch not started yet are skipped for it. A final text moves to
 * `finalizing`, which asks whether the draft answers the newest user message the turn owns (the built-in
 * signals in `assessing`, or the gateway's own detector in `detecting`, with the built-in signals as
 * its fallback); if not, and passes remain, `recheck` adds a re-anchor instruction and drafts once more. A background turn
 * (`run.notice`) is also shown typed messages that wait for their own turn, and a draft made before one
 * arrived is stale. `run.abort` ends the
 * turn in `aborted` (after a running tool that cannot be cancelled has finished); a model error ends
 * it in `failed`. Every ending outputs the journal, so the session can store what happened.
 *
 * @internal Exported for graph tests, diagrams and the testing kit; the gateway provides its actors.
 */
export const runMachine = runSetup.createMachine({
  id: "run",
  // Built once per turn, before the first model call: no copy of the input (a rest spread of it cost
  // more than the rest of this function) and no copy of arrays nobody mutates (context arrays are
  // replaced, never changed in place). `call` counts the first call here: nothing can be held back
  // before it, so the way into `streaming` the first time needs no step and no copy of this context.
  context: ({ input }) => ({
    input,
    journal: startJournal(input),
    persisted: 0,
    owned: input.messages,
    steerBuffer: [],
    noticeBuffer: [],
    noticed: input.noticed ?? [],
    call: 1,
    passes: 0,
    recheckPending: false,
    pendingCalls: [],
    toolIndex: 0,
    completedTools: [],
    sendOrdinal: 0,
    draft: "",
    verdict: { stale: false },
    abortReason: null,
    error: null,
    status: "running",
  }),
  initial: "streaming",
  on: {
    "run.steer": { actions: "bufferSteer", description: "Held until the next model call or the re-check." },
    "run.notice": {
      actions: "bufferNotice",
      description: "Shown at the next model call; at finalize it makes the draft stale (newer-message).",
    },
    "run.stop": {
      actions: "dropHeld",
      description: "Already stopping (a tool that cannot be cancelled): held steering is dropped.",
    },
  },
  states: {
    streaming: {
      description:
        "One model call over the history and this turn's journal. Every way back in joins held steering and notices to the journal and counts a call.",
      invoke: {
        id: "callModel",
        src: "callModel",
        input: ({ context }) => callModelInput(context),
        onDone: [
          {
            guard: { type: "callLimitReached", params: ({ event }) => ({ output: event.output }) },
            target: "failed",
            actions: { type: "recordCallLimit", params: ({ event }) => ({ output: event.output }) },
            description: "The model keeps asking for tools: the turn stops instead of looping forever.",
          },
          {
            guard: { type: "hasToolCalls", params: ({ event }) => ({ output: event.output }) },
            target: "toolBatch",
            actions: { type: "recordToolCalls", params: ({ event }) => ({ output: event.output }) },
          },
          {
            target: "finalizing",
            actions: { type: "recordDraft", params: ({ event }) => ({ output: event.output }) },
          },
        ],
        onError: {
          target: "failed",
          actions: { type: "recordCallError", params: ({ event }) => ({ error: event.error }) },
        },
      },
      on: {
        "run.abort": { target: "aborted", actions: "noteAbort", description: "The model call is cancelled." },
        "run.stop": { target: "aborted", actions: ["dropHeld", "noteAbort"] },
      },
    },
    toolBatch: {
      description: "Runs the model's tool calls in order, one at a time.",
      initial: "nextTool",
      states: {
        nextTool: {
          description: "Between two tools: a steering message skips the rest of the batch.",
          always: [
            {
              guard: "steerPending",
              target: "#run.streaming",
              actions: ["emitToolsSkipped", "skipRemainingTools", "injectSteer", "countCall"],
            },
            { guard: "moreTools", target: "toolRunning" },
            { target: "#run.streaming", actions: ["injectSteer", "countCall"] },
          ],
        },
        toolRunning: {
          entry: ["announceTool", "emitToolStarted"],
          invoke: {
            id: "runTool",
            src: "runTool",
            input: ({ context }) => ({
              runId: context.input.runId,
              session: context.input.session,
              kind: context.input.kind,
              ...(context.input.channel ? { channel: context.input.channel } : {}),
              ...(context.input.turnKey ? { turnKey: context.input.turnKey } : {}),
              sendOrdinal: context.sendOrdinal,
              ...(context.input.lane ? { lane: context.input.lane } : {}),
              call: context.pendingCalls[context.toolIndex]!,
              unpersisted: context.journal.slice(context.persisted),
              journalOffset: context.persisted,
              ...turnSenders([...context.owned, ...context.steerBuffer]),
            }),
            onDone: [
              {
                guard: "abortRequested",
                target: "#run.aborted",
                actions: [
                  { type: "recordToolResult", params: ({ event }) => ({ output: event.output }) },
                  "emitToolEnded",
                ],
              },
              {
                target: "nextTool",
                actions: [
                  { type: "recordToolResult", params: ({ event }) => ({ output: event.output }) },
                  "emitToolEnded",
                ],
              },
            ],
            onError: [
              {
                guard: "abortRequested",
                target: "#run.aborted",
                actions: [
                  { type: "recordToolFailure", params: ({ event }) => ({ error: event.error }) },
                  "emitToolEnded",
                ],
              },
              {
                target: "nextTool",
                actions: [
                  { type: "recordToolFailure", params: ({ event }) => ({ error: event.error }) },
                  "emitToolEnded",
                ],
              },
            ],
          },
          initial: "working",
          states: {
            working: {
              description: "The tool runs; steering messages wait for it to end.",
              on: {
                "run.abort": [
                  {
                    guard: "abandonRequested",
                    target: "#run.aborted",
                    actions: ["noteAbort", "recordToolAbandoned", "emitToolEnded"],
                    description:
                      "The lane timeout ended the turn: a tool that cannot be cancelled runs on unseen; its late result is dropped.",
                  },
                  {
                    guard: "currentToolCancellable",
                    target: "#run.aborted",
                    actions: ["noteAbort", "recordToolCancelled", "emitToolEnded"],
                    description: "A cancellable tool is stopped and gets a synthetic result.",
                  },
                  { target: "aborting", actions: "noteAbort" },
                ],
                "run.stop": [
                  {
                    guard: "currentToolCancellable",
                    target: "#run.aborted",
                    actions: ["dropHeld", "noteAbort", "recordToolCancelled", "emitToolEnded"],
                  },
                  { target: "aborting", actions: ["dropHeld", "noteAbort"] },
                ],
              },
            },
            aborting: {
              description:
                "Interrupted, but the running tool cannot be cancelled: the run ends when it does.",
              on: {
                "run.abort": {
                  guard: "abandonRequested",
                  target: "#run.aborted",
                  actions: ["noteAbort", "recordToolAbandoned", "emitToolEnded"],
                  description:
                    "The lane timeout ended the turn: the tool is no longer waited for; its late result is dropped.",
                },
              },
            },
          },
        },
      },
    },
    finalizing: {
      description: "Does the draft answer the newest user message the turn owns?",
      initial: "assessing",
      states: {
        assessing: {
          description:
            "The built-in signals decide at once; a draft the gateway's own detector must judge goes to `detecting`.",
          always: [
            { guard: "needsDetector", target: "detecting" },
            { target: "deciding", actions: "assess" },
          ],
        },
        detecting: {
          description:
            "The gateway's detector judges the draft. If it throws, times out or returns no verdict, the built-in signals decide.",
          invoke: {
            id: "detectStale",
            src: "detectStale",
            input: ({ context }) => ({
              runId: context.input.runId,
              session: context.input.session,
              facts: draftFacts(context),
            }),
            onDone: {
              target: "deciding",
              actions: { type: "recordDetected", params: ({ event }) => ({ output: event.output }) },
            },
            onError: {
              target: "deciding",
              actions: [
                { type: "emitDetectorFailed", params: ({ event }) => ({ error: event.error }) },
                "assessFallback",
              ],
              description: "The detector failed: the built-in signals are the fallback.",
            },
          },
          on: {
            "run.abort": { target: "#run.aborted", actions: "noteAbort" },
            "run.stop": { target: "#run.aborted", actions: ["dropHeld", "noteAbort"] },
          },
        },
        deciding: {
          description:
            "A stale draft is re-drafted while passes remain; otherwise it ships, and a skip is said.",
          always: [
            { guard: "staleWithPassesLeft", target: "#run.recheck" },
            {
              guard: "backgroundSuperseded",
              target: "#run.aborted",
              actions: ["emitRecheckSkipped", "supersede"],
              description:
                "A turn nobody typed, out of passes, has a draft that missed a user message: it is never delivered; the user's messages get a turn of their own.",
            },
            { guard: "staleButDisabled", target: "#run.done", actions: "emitRecheckSkipped" },
            { guard: "staleAtLimit", target: "#run.done", actions: "emitRecheckSkipped" },
            { target: "#run.done" },
          ],
        },
      },
    },
    recheck: {
      description: "Adds the re-anchor instruction; the next model call drafts once more.",
      entry: ["emitRecheckFired", "startRecheck"],
      always: { target: "streaming", actions: ["injectSteer", "countCall"] },
    },
    done: {
      type: "final",
      description: "The final text is ready for delivery.",
      entry: { type: "markStatus", params: { status: "done" } },
    },
    aborted: {
      type: "final",
      description: "Stopped by the session; nothing is delivered.",
      entry: { type: "markStatus", params: { status: "aborted" } },
    },
    failed: {
      type: "final",
      description: "The model call failed; the error is in the output.",
      entry: { type: "markStatus", params: { status: "failed" } },
    },
  },
  output: ({ context }) => {
    const status = context.status === "running" ? "failed" : context.status;
    return {
      runId: context.input.runId,
      status,
      final: status === "done" ? context.draft : "",
      answered: context.owned.map((message) => message.id),
      leftover: context.steerBuffer,
      journal: context.journal,
      persisted: context.persisted,
      passes: context.passes,
      completedTools: context.completedTools,
      error: context.error,
      abortReason: context.abortReason,
      messageSends: messageSends(context.journal),
      ...(context.input.channel ? { channel: context.input.channel } : {}),
      ...(context.input.trigger ? { trigger: context.input.trigger } : {}),
    };
  },
});

export type RunActorRef = ActorRefFrom<typeof runMachine>;
