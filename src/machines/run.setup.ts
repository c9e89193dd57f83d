// The run machine's implementations: its types, the actors the gateway provides, guards and actions
// (the machine itself, its states and transitions, is in run.machine.ts).
import { assign, emit, enqueueActions, fromPromise, setup } from "xstate";
import { isTypedTrigger } from "../policy/lane-priority.js";
import { reanchorInstruction } from "../policy/stale-reply.js";
import { RECHECK_NOTE, SUPERSEDED_DRAFT, type TurnItem } from "../policy/turn-context.js";
import type {
  CallModelInput,
  CallModelOutput,
  DetectStaleInput,
  DetectStaleOutput,
  RunContext,
  RunEmitted,
  RunEvent,
  RunInput,
  RunOutput,
  RunToolInput,
  RunToolOutput,
} from "./run.types.js";
import {
  assistantNote,
  builtInVerdict,
  isBackgroundTurn,
  isCancellable,
  maxCalls,
  newestIsTyped,
  newestMessage,
  toolResultItem,
  toRunError,
} from "./run-context.js";
import { bufferSteer, injectSteer } from "./steer.js";

const SKIPPED_RESULT = "skipped for an incoming message";
/** Why a background turn ended without delivering: a user message came after its last draft. */
export const SUPERSEDED = "superseded by a newer user message";

// What the invoked actors hand to the actions and guards that take their result (as typed params).
/** The `callModel` actor's reply. */
export type ModelResult = { output: CallModelOutput };
/** The `runTool` actor's result. */
export type ToolResult = { output: RunToolOutput };
/** The `detectStale` actor's verdict. */
export type DetectorResult = { output: DetectStaleOutput };
/** What an invoked actor rejected with. */
export type ActorFailure = { error: unknown };

export const runSetup = setup({
  types: {} as {
    input: RunInput;
    context: RunContext;
    events: RunEvent;
    emitted: RunEmitted;
    output: RunOutput;
  },
  actors: {
    callModel: fromPromise<CallModelOutput, CallModelInput>(async () => {
      throw new Error("callModel is provided by the gateway");
    }),
    runTool: fromPromise<RunToolOutput, RunToolInput>(async () => {
      throw new Error("runTool is provided by the gateway");
    }),
    detectStale: fromPromise<DetectStaleOutput, DetectStaleInput>(async () => {
      throw new Error("detectStale is provided by the gateway");
    }),
  },
  guards: {
    callLimitReached: ({ context }, params: ModelResult) =>
      params.output.toolCalls.length > 0 && context.call >= maxCalls(context),
    hasToolCalls: (_, params: ModelResult) => params.output.toolCalls.length > 0,
    steerPending: ({ context }) => context.steerBuffer.length > 0,
    moreTools: ({ context }) => context.toolIndex < context.pendingCalls.length,
    abortRequested: ({ context }) => context.abortReason !== null,
    abandonRequested: ({ event }) => event.type === "run.abort" && event.abandon === true,
    currentToolCancellable: ({ context }) => isCancellable(context),
    staleWithPassesLeft: ({ context }) =>
      context.verdict.stale &&
      context.input.recheck.enabled &&
      context.passes < context.input.recheck.maxPasses,
    staleButDisabled: ({ context }) => context.verdict.stale && !context.input.recheck.enabled,
    staleAtLimit: ({ context }) => context.verdict.stale,
    backgroundSuperseded: ({ context }) =>
      context.verdict.stale && context.verdict.reason === "newer-message" && isBackgroundTurn(context),
    // The gateway's own detector judges a draft only when its verdict can lead to a re-draft: not for
    // silence, not when a newer message already decides it, not past the limit or when disabled.
    needsDetector: ({ context }) =>
      context.input.recheck.detector === "custom" &&
      context.input.recheck.enabled &&
      context.passes < context.input.recheck.maxPasses &&
      context.steerBuffer.length === 0 &&
      context.noticeBuffer.length === 0 &&
      newestIsTyped(context) &&
      context.draft.trim().length > 0,
  },
  actions: {
    // A steer's injection at the tool-batch boundary: see steer.ts.
    injectSteer: enqueueActions(({ context, enqueue }) => {
      // One assign for the notices and the steering both: `context` is the one before this action.
      const injected = injectSteer(context);
      if (!injected) return;
      for (const event of injected.emitted) enqueue.emit(event);
      enqueue.assign(injected.patch);
    }),
    countCall: assign(({ context }) => ({ call: context.call + 1 })),
    bufferNotice: assign({
      noticeBuffer: ({ context, event }) =>
        event.type === "run.notice" ? [...context.noticeBuffer, event.message] : context.noticeBuffer,
    }),
    bufferSteer: assign({
      steerBuffer: ({ context, event }) =>
        event.type === "run.steer" ? bufferSteer(context, event.message) : context.steerBuffer,
    }),
    recordToolCalls: assign(({ context }, { output }: ModelResult) => {
      return {
        persisted: context.persisted + output.persisted,
        pendingCalls: output.toolCalls,
        toolIndex: 0,
        recheckPending: false,
        journal: output.text ? [...context.journal, assistantNote(output.text)] : context.journal,
      };
    }),
    recordDraft: assign(({ context }, { output }: ModelResult) => {
      return { persisted: context.persisted + output.persisted, draft: output.text, recheckPending: false };
    }),
    recordCallLimit: assign(({ context }, { output }: ModelResult) => ({
      persisted: context.persisted + output.persisted,
      error: {
        code: "MODEL_CALL_LIMIT",
        message: `the model asked for tools on each of ${context.call} calls; the turn allows ${maxCalls(context)}`,
        retryable: false,
      },
    })),
    recordCallError: assign({ error: (_, params: ActorFailure) => toRunError(params.error) }),
    announceTool: assign(({ context }) => {
      const call = context.pendingCalls[context.toolIndex]!;
      return {
        journal: [
          ...context.journal,
          {
            role: "toolCall" as const,
            callId: call.callId,
            name: call.name,
            args: call.args,
            runId: context.input.runId,
          },
        ],
      };
    }),
    emitToolStarted: emit(({ context }) => {
      const call = context.pendingCalls[context.toolIndex]!;
      return { type: "tool.started" as const, callId: call.callId, name: call.name, args: call.args };
    }),
    recordToolResult: assign(({ context }, { output }: ToolResult) => {
      const call = context.pendingCalls[context.toolIndex]!;
      return {
        persisted: context.persisted + output.persisted,
        toolIndex: context.toolIndex + 1,
        completedTools:
          output.status === "done" ? [...context.completedTools, call.name] : context.completedTools,
        sendOrdinal: output.sendOrdinal ?? context.sendOrdinal,
        journal: [...context.journal, toolResultItem(context, call, output.status, output.result)],
      };
    }),
    recordToolFailure: assign(({ context }, params: ActorFailure) => {
      const call = context.pendingCalls[context.toolIndex]!;
      const error = toRunError(params.error);
      return {
        toolIndex: context.toolIndex + 1,
        journal: [...context.journal, toolResultItem(context, call, "failed", { error: error.message })],
      };
    }),
    emitToolEnded: emit(({ context }) => {
      const call = context.pendingCalls[context.toolIndex - 1]!;
      const last = context.journal[context.journal.length - 1];
      const status = last?.role === "toolResult" ? last.status : "done";
      return { type: "tool.ended" as const, callId: call.callId, name: call.name, args: call.args, status };
    }),
    recordToolCancelled: assign(({ context }) =>
      closeCurrentCall(context, "cancelled: the turn was interrupted by a newer message"),
    ),
    recordToolAbandoned: assign(({ context }) =>
      closeCurrentCall(
        context,
        "abandoned: the turn ran out of time while this call was still running; its outcome is unknown",
      ),
    ),
    skipRemainingTools: assign(({ context }) => {
      const skipped = context.pendingCalls.slice(context.toolIndex);
      const items: TurnItem[] = [];
      for (const call of skipped) {
        items.push({
          role: "toolCall",
          callId: call.callId,
          name: call.name,
          args: call.args,
          runId: context.input.runId,
        });
        items.push(toolResultItem(context, call, "skipped", SKIPPED_RESULT));
      }
      return { journal: [...context.journal, ...items], toolIndex: context.pendingCalls.length };
    }),
    emitToolsSkipped: enqueueActions(({ context, enqueue }) => {
      // Runs before skipRemainingTools, so pendingCalls[toolIndex..] are the calls being skipped.
      for (const call of context.pendingCalls.slice(context.toolIndex)) {
        enqueue.emit({
          type: "tool.skipped",
          callId: call.callId,
          name: call.name,
          args: call.args,
          reason: SKIPPED_RESULT,
        });
      }
    }),
    markStatus: assign({
      status: (_, params: { status: "done" | "aborted" | "failed" }) => params.status,
    }),
    noteAbort: assign({
      abortReason: ({ event }) =>
        event.type === "run.abort" || event.type === "run.stop" ? event.reason : "aborted",
    }),
    dropHeld: enqueueActions(({ context, enqueue }) => {
      // A /stop drops the steering the model never saw; the session drops what still waits in its queue.
      for (const message of context.steerBuffer)
        enqueue.emit({ type: "message.dropped", messageId: message.id, reason: "cleared by /stop" });
      enqueue.assign({ steerBuffer: [] });
    }),
    supersede: assign(({ context }) => ({
      abortReason: SUPERSEDED,
      // Typed messages it owned go back to the session, marked as stored (they may already be in the
      // transcript), and run as a turn of their own; the task it was started for ends here.
      owned: context.owned.filter((message) => !isTypedTrigger(message.trigger)),
      steerBuffer: [
        ...context.owned
          .filter((message) => isTypedTrigger(message.trigger))
          .map((message) => ({ ...message, stored: true })),
        ...context.steerBuffer,
      ],
    })),
    assess: assign({ verdict: ({ context }) => builtInVerdict(context) }),
    recordDetected: assign({
      verdict: ({ context }, { output }: DetectorResult) =>
        // A message steered in while the detector worked makes the draft stale whatever it said.
        context.steerBuffer.length > 0 || context.noticeBuffer.length > 0
          ? builtInVerdict(context)
          : { ...output, detector: "custom" as const },
    }),
    assessFallback: assign({ verdict: ({ context }) => builtInVerdict(context, true) }),
    emitDetectorFailed: emit((_, params: ActorFailure) => ({
      type: "recheck.detectorFailed" as const,
      error: toRunError(params.error),
      fallback: "built-in" as const,
    })),
    startRecheck: assign(({ context }) => {
      const newest = newestMessage(context)?.text ?? "";
      const reason = context.verdict.reason ?? "newer-message";
      return {
        passes: context.passes + 1,
        recheckPending: true,
        journal: [
          ...context.journal,
          {
            role: "custom" as const,
            customType: SUPERSEDED_DRAFT,
            display: false,
            details: { text: context.draft, runId: context.input.runId },
          },
          {
            role: "custom" as const,
            customType: RECHECK_NOTE,
            display: false,
            details: { reason, instruction: reanchorInstruction(reason, newest), runId: context.input.runId },
          },
        ],
      };
    }),
    emitRecheckFired: emit(({ context }) => ({
      type: "recheck.fired" as const,
      reason: context.verdict.reason ?? "newer-message",
      detail: context.verdict.detail ?? "",
      pass: context.passes + 1,
      detector: context.verdict.detector ?? "built-in",
      fallback: context.verdict.fallback === true,
      figures: context.verdict.figures ?? {},
    })),
    emitRecheckSkipped: emit(({ context }) => ({
      type: "recheck.skipped" as const,
      reason: context.input.recheck.enabled ? ("limit" as const) : ("disabled" as const),
      signal: context.verdict.reason ?? "newer-message",
      detail: context.verdict.detail ?? "",
      detector: context.verdict.detector ?? "built-in",
      fallback: context.verdict.fallback === true,
      figures: context.verdict.figures ?? {},
    })),
  },
});

/** The running call ends without its result: a synthetic `cancelled` result, and the batch moves on. */
function closeCurrentCall(context: RunContext, why: string): Partial<RunContext> {
  const call = context.pendingCalls[context.toolIndex]!;
  return {
    toolIndex: context.toolIndex + 1,
    journal: [...context.journal, toolResultItem(context, call, "cancelled", why)],
  };
}
