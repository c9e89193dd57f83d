// The session machine's implementations: its types, the actors the gateway provides, guards and
// actions (the machine itself, its states and transitions, is in session.machine.ts).
import { assign, emit, enqueueActions, fromCallback, fromPromise, sendTo, setup } from "xstate";
import { isTypedTrigger } from "../policy/lane-priority.js";
import type { ResolvedQueueSetting } from "../policy/queue-mode.js";
import { sameSender } from "../policy/sender.js";
import type { OwnedMessage } from "../policy/turn-context.js";
import { type RunEvent, type RunOutput, runMachine } from "./run.machine.js";
import {
  type DeliverInput,
  type DeliverOutput,
  LANE_TIMEOUT_REASON,
  type PendingTurn,
  type QueueItem,
  type SessionContext,
  type SessionEmitted,
  type SessionEvent,
  type SessionInput,
} from "./session.types.js";
import { decision, failedOutput, turnOrigin } from "./session-context.js";
import { replacePending, replaceQueued } from "./session-edits.js";
import { admitToQueue, requeuePending, takeNextTurn } from "./session-queue.js";
import { cutsIn, isOtherSender, isSteer, keepRunOutput, steerIntoTurn } from "./steer.js";

/** Where a message waits when it cannot join the running turn; the ack says it. */
export const EARLIER_FIRST = "messages sent earlier are answered first; this one is answered after them";
/** Why another sender's message does not join the running turn: it runs as its own, after it. */
export const OTHER_SENDER = "another person's request is running; yours is next";
const OTHER_SENDER_BEHIND =
  "another person's request is running; yours is answered after it and the messages already waiting";
export const RESETTING = "a fresh conversation is being started; this is answered in it";
const RESENDING = "an earlier reply that did not reach you is being resent first; this is answered next";
const STOPPED = "stopped by /stop";
const INTERRUPTED = "interrupted by message";
/** The reason of a `reject`-mode message that found the session busy (the ack's `reason`). */
export const BUSY = "busy";
const NEW_CONVERSATION = "cut off by /new";
/** Why a heartbeat turn ended: a user's message needed the session (`turn.ended` reason). */
export const PREEMPTED = "preempted";
const HEARTBEAT_BUSY = "the session is busy; a heartbeat only runs in an idle session";
const HEARTBEAT_REPLACED = "a user message needs the session; the heartbeat that waited for it is dropped";

/** The message is a typed one (a person wrote it) and the turn in hand is a heartbeat. */
function preempts(message: OwnedMessage, pending: PendingTurn | null): boolean {
  return isTypedTrigger(message.trigger) && pending?.kind === "turn" && pending.trigger === "heartbeat";
}

/**
 * The collect window after this message: the quiet window, cut short so that the burst runs no later
 * than `collectMaxWaitMs` after its first message.
 */
function collectDelay(
  queue: readonly QueueItem[],
  message: OwnedMessage,
  setting: ResolvedQueueSetting,
): number {
  if (setting.collectMaxWaitMs === undefined) return setting.debounceMs;
  const burst = queue.find(
    (item) => item.kind === "collect" && item.messages.some((queued) => queued.id === message.id),
  );
  const first = burst && burst.kind === "collect" ? (burst.messages[0]?.at ?? message.at) : message.at;
  return Math.max(0, Math.min(setting.debounceMs, first + setting.collectMaxWaitMs - message.at));
}

/** An event for the run actor, checked against its event type (a target named by id is untyped). */
function runEvent(event: RunEvent): RunEvent {
  return event;
}

/** Why waiting messages were dropped: the command that dropped them. */
function clearedBy(event: SessionEvent): string {
  return event.type === "session.new" ? "cleared by /new" : "cleared by /stop";
}

export const sessionSetup = setup({
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
    // Steering: see steer.ts.
    isSteer: ({ event, context }) => isSteer(event, context),
    isInterrupt: ({ event }) =>
      event.type === "session.message" &&
      isTypedTrigger(event.message.trigger) &&
      event.setting.mode === "interrupt",
    isRollback: ({ event }) =>
      event.type === "session.message" &&
      isTypedTrigger(event.message.trigger) &&
      event.setting.mode === "rollback",
    // `reject`: a busy session does not take a person's message at all; work nobody typed still queues.
    isReject: ({ event }) =>
      event.type === "session.message" &&
      isTypedTrigger(event.message.trigger) &&
      event.setting.mode === "reject",
    // The queue is checked first: a message to an idle session usually finds it empty.
    isRejectWhileQueued: ({ event, context }) =>
      context.queue.length > 0 &&
      event.type === "session.message" &&
      isTypedTrigger(event.message.trigger) &&
      event.setting.mode === "reject",
    // A message may only join a turn its own sender owns, unless steering across senders is on.
    isOtherSender: ({ event, context }) => isOtherSender(event, context),
    joinsPendingTurn: ({ event, context }) =>
      event.type === "session.message" &&
      isTypedTrigger(event.message.trigger) &&
      context.pending?.kind === "turn" &&
      cutsIn(event.setting.mode),
    // A heartbeat never waits and never queues: it runs in an idle session or not at all.
    isHeartbeat: ({ event }) => event.type === "session.message" && event.message.trigger === "heartbeat",
    isHeartbeatWhileQueued: ({ event, context }) =>
      context.queue.length > 0 && event.type === "session.message" && event.message.trigger === "heartbeat",
    preemptsHeartbeat: ({ event, context }) =>
      event.type === "session.message" && preempts(event.message, context.pending),
    // A typed message waiting for its own turn while a background turn runs: that turn must see it.
    noticedByRun: ({ event, context }) =>
      event.type === "session.message" &&
      isTypedTrigger(event.message.trigger) &&
      context.pending?.kind === "turn" &&
      !isTypedTrigger(context.pending.trigger),
    // Edits: the message it replaces still waits (queue), is in the turn about to start, or is in the
    // running turn. Otherwise (answered, unknown) the edit is routed like any message: a new turn.
    editsQueued: ({ event, context }) =>
      context.queue.length > 0 &&
      event.type === "session.message" &&
      event.message.editOf !== undefined &&
      context.queue.some(
        (item) => item.kind !== "recovery" && item.messages.some((m) => m.id === event.message.editOf),
      ),
    editsTurn: ({ event, context }) =>
      event.type === "session.message" &&
      event.message.editOf !== undefined &&
      context.pending?.kind === "turn" &&
      context.pending.messages.some((m) => m.id === event.message.editOf),
    headIsCollect: ({ context }) => context.queue[0]?.kind === "collect",
    hasQueued: ({ context }) => context.queue.length > 0,
    isResend: ({ context }) => context.pending?.recovery?.deliveryMode === "automatic",
    isCollectMessage: ({ event }) => event.type === "session.message" && event.setting.mode === "collect",
  },
  actions: {
    startWith: assign(({ context, event }) => {
      if (event.type !== "session.message") return {};
      return {
        pending: {
          kind: "turn" as const,
          messages: [event.message],
          summaries: context.summaries,
          ...turnOrigin([event.message]),
        },
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
      const asked =
        params?.waitsBehind === OTHER_SENDER && context.queue.length > 0
          ? OTHER_SENDER_BEHIND
          : params?.waitsBehind;
      const waitsBehind = asked ?? (context.pending?.kind === "recovery" ? RESENDING : undefined);
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
          event.setting.mode === "collect"
            ? collectDelay(result.queue, event.message, event.setting)
            : context.collectDebounceMs,
        lastDecision: decision(
          event,
          result.rejected ? "rejected" : result.collected ? "collected" : "queued",
          result.reason,
          result.dropped.map((drop) => drop.messageId),
        ),
      });
    }),
    dropTriggered: assign(({ event }) =>
      event.type === "session.message" ? { lastDecision: decision(event, "dropped", HEARTBEAT_BUSY) } : {},
    ),
    dropPendingHeartbeat: enqueueActions(({ context, enqueue }) => {
      for (const message of context.pending?.messages ?? []) {
        enqueue.emit({ type: "message.dropped", messageId: message.id, reason: HEARTBEAT_REPLACED });
      }
      enqueue.assign({ pending: null });
    }),
    preemptRun: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "session.message") return;
      // The heartbeat owns nothing any more: it is not run again, its reply is never delivered, and the
      // message runs next, ahead of scheduled work that queued meanwhile.
      enqueue.assign({
        queue: [{ kind: "followup", messages: [event.message] }, ...context.queue],
        lastDecision: decision(
          event,
          "interrupted",
          "a background heartbeat turn was stopped to answer this",
        ),
        ...(context.pending ? { pending: { ...context.pending, messages: [] } } : {}),
      });
      enqueue.sendTo("run", runEvent({ type: "run.abort", reason: PREEMPTED }));
    }),
    noticeRun: enqueueActions(({ event, enqueue }) => {
      if (event.type !== "session.message") return;
      enqueue.sendTo("run", runEvent({ type: "run.notice", message: event.message }));
    }),
    steerIntoRun: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "session.message") return;
      enqueue.sendTo("run", runEvent({ type: "run.steer", message: event.message }));
      enqueue.assign(steerIntoTurn(context, event));
    }),
    replaceQueued: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "session.message") return;
      const replaced = replaceQueued(context, event);
      enqueue.emit(replaced.emitted);
      enqueue.assign(replaced.patch);
    }),
    replacePending: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "session.message" || !context.pending) return;
      const replaced = replacePending({ ...context, pending: context.pending }, event);
      enqueue.emit(replaced.emitted);
      enqueue.assign(replaced.patch);
    }),
    rejectBusy: assign(({ event }) =>
      event.type === "session.message" ? { lastDecision: decision(event, "rejected", BUSY) } : {},
    ),
    interruptRun: enqueueActions(({ context, event, enqueue }, params?: { rollback?: boolean }) => {
      if (event.type !== "session.message") return;
      // What the same sender left waiting folds into the interrupting turn, so no accepted message is
      // lost; another person's waiting work keeps its own turn (a turn never mixes senders by itself).
      const folded: OwnedMessage[] = [];
      const kept: QueueItem[] = [];
      const sender = event.message.sender;
      const across = event.setting.steerAcrossSenders === true;
      for (const item of context.queue) {
        if (item.kind === "recovery") {
          kept.push(item);
          continue;
        }
        const mine = across ? item.messages : item.messages.filter((m) => sameSender(m.sender, sender));
        const theirs = across ? [] : item.messages.filter((m) => !sameSender(m.sender, sender));
        folded.push(...mine);
        if (theirs.length > 0) kept.push({ ...item, messages: theirs });
      }
      const messages = [...folded, event.message];
      enqueue.assign({
        queue: [{ kind: "followup", messages }, ...kept],
        // Saved with the turn, so a restart does not run the interrupted turn again (nor forgets to
        // hide a rolled-back one from later model calls).
        ...(context.pending
          ? {
              pending: {
                ...context.pending,
                interrupted: true,
                ...(params?.rollback ? { rolledBack: true } : {}),
              },
            }
          : {}),
        lastDecision: decision(event, "interrupted"),
      });
      enqueue.sendTo("run", runEvent({ type: "run.abort", reason: `${INTERRUPTED} ${event.message.id}` }));
    }),
    abortRun: enqueueActions(({ context, enqueue }) => {
      // The run drops the steering it still holds back (never shown to the model) and says so. The
      // stopped turn owns nothing more: a restart does not run it again, and only messages steered after
      // the stop come back later.
      enqueue.sendTo("run", runEvent({ type: "run.stop", reason: STOPPED }));
      if (context.pending) enqueue.assign({ pending: { ...context.pending, messages: [] } });
    }),
    clearWaiting: enqueueActions(({ context, event, enqueue }) => {
      const reason = clearedBy(event);
      for (const item of context.queue) {
        if (item.kind === "recovery") continue;
        for (const message of item.messages) {
          enqueue.emit({ type: "message.dropped", messageId: message.id, reason });
        }
      }
      enqueue.assign({ queue: context.queue.filter((item) => item.kind === "recovery"), summaries: [] });
    }),
    dropPending: enqueueActions(({ context, event, enqueue, self }) => {
      const reason = clearedBy(event);
      // Messages the model already saw were not dropped: their turn was cut off (turn.ended says so).
      // (A pure transition, as graph traversal makes, has no live children: nothing was seen then.)
      const run = self.getSnapshot()?.children?.run?.getSnapshot()?.context;
      const seen = new Set<string>(
        run && run.call > 0 && Array.isArray(run.owned)
          ? run.owned.map((message: OwnedMessage) => message.id)
          : [],
      );
      for (const message of context.pending?.messages ?? []) {
        if (seen.has(message.id)) continue;
        enqueue.emit({ type: "message.dropped", messageId: message.id, reason });
      }
      enqueue.assign({ pending: null });
    }),
    endTurn: assign({ pending: null }),
    // A tool that cannot be cancelled is not waited for: the session is free at once.
    abortRunForLaneTimeout: sendTo(
      "run",
      runEvent({ type: "run.abort", reason: LANE_TIMEOUT_REASON, abandon: true }),
    ),
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
      trigger: context.pending?.trigger ?? "user",
    })),
    keepOutput: enqueueActions(({ context, enqueue }, { output }: { output: RunOutput }) => {
      const interrupted = output.status === "aborted" && output.abortReason?.startsWith(INTERRUPTED) === true;
      const kept = keepRunOutput(context, output, interrupted);
      if (kept.missed) enqueue.emit(kept.missed);
      enqueue.assign(kept.patch);
    }),
    keepFailure: assign(({ context }, params: { error: unknown; runId?: string | undefined }) => ({
      lastOutput: failedOutput(params.runId ?? context.runId ?? "", params.error),
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
    emitTurnEnded: emit(({ context }) => {
      const output = context.lastOutput;
      return {
        type: "turn.ended" as const,
        // The output's: a turn that failed before its run began has no runId in context yet.
        runId: output?.runId || context.runId || "",
        status: output?.status ?? "failed",
        ...(output?.status === "failed" && output.error ? { error: output.error } : {}),
        ...(output?.status === "aborted" && output.abortReason ? { reason: output.abortReason } : {}),
      };
    }),
    emitTurnCut: emit(({ context }) => ({
      type: "turn.ended" as const,
      runId: context.runId ?? "",
      status: "aborted",
      reason: NEW_CONVERSATION,
    })),
    queueRecovery: assign(({ context }, { output }: { output: DeliverOutput }) => {
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
      enqueue.assign(requeuePending(context.pending, context));
    }),
  },
  delays: {
    collectWindow: ({ context }) => context.collectDebounceMs,
  },
});
