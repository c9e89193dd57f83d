// A steer is a user message that joins the turn already running: the session hands it to its run
// (`run.steer`), and the run injects it at the next tool-batch boundary, before its next model call.
import { isTypedTrigger } from "../policy/lane-priority.js";
import type { QueueMode } from "../policy/queue-mode.js";
import { sameSender } from "../policy/sender.js";
import type { OwnedMessage } from "../policy/turn-context.js";
import type { RunContext, RunEmitted, RunOutput } from "./run.types.js";
import { noticeItems, userItem } from "./run-context.js";
import type { SessionContext, SessionEmitted, SessionEvent } from "./session.types.js";
import { byArrival, decision } from "./session-context.js";
import { requeueLeftover } from "./session-queue.js";

type MessageEvent = Extract<SessionEvent, { type: "session.message" }>;

/** Modes whose message wants the running turn itself (to steer it, or to cut it off). */
export function cutsIn(mode: QueueMode): boolean {
  return mode === "steer" || mode === "interrupt" || mode === "rollback";
}

/**
 * The message steers the turn in hand: a typed message in `steer` mode while a turn (not a recovery,
 * which only resends an earlier reply and would never answer it) is pending or running.
 */
export function isSteer(event: SessionEvent, context: SessionContext): boolean {
  return (
    event.type === "session.message" &&
    isTypedTrigger(event.message.trigger) &&
    event.setting.mode === "steer" &&
    context.pending?.kind === "turn"
  );
}

/** The message would cut into a turn another sender owns, and steering across senders is off. */
export function isOtherSender(event: SessionEvent, context: SessionContext): boolean {
  return (
    event.type === "session.message" &&
    event.setting.steerAcrossSenders !== true &&
    context.pending?.kind === "turn" &&
    cutsIn(event.setting.mode) &&
    context.pending.messages.some((message) => !sameSender(message.sender, event.message.sender))
  );
}

/** The session's side of a steer: the running turn owns the message now, and the ack says `steered`. */
export function steerIntoTurn(context: SessionContext, event: MessageEvent): Partial<SessionContext> {
  return {
    // Persisted with the turn, so a crash before it is stored re-runs it.
    ...(context.pending
      ? { pending: { ...context.pending, messages: [...context.pending.messages, event.message] } }
      : {}),
    lastDecision: {
      ...decision(
        event,
        "steered",
        event.message.editOf
          ? `a correction of ${event.message.editOf}, which the running reply already has`
          : undefined,
      ),
      ...(context.runId ? { runId: context.runId } : {}),
    },
  };
}

/** The run's steering buffer with one more message held back until the next model call. */
export function bufferSteer(context: RunContext, message: OwnedMessage): OwnedMessage[] {
  return [...context.steerBuffer, message];
}

/**
 * The run's side of a steer, before a model call: what it emits and the context after the held-back
 * notices and steering messages joined the journal; undefined when nothing was held back.
 */
export function injectSteer(
  context: RunContext,
): { emitted: RunEmitted[]; patch: Partial<RunContext> } | undefined {
  const emitted: RunEmitted[] = [];
  let journal = context.journal;
  if (context.noticeBuffer.length > 0) {
    emitted.push({
      type: "notice.injected",
      messageIds: context.noticeBuffer.map((message) => message.id),
    });
    journal = [...journal, ...noticeItems(context.noticeBuffer)];
  }
  // One at a time: the rest stay held for the next call (and still skip a tool batch meanwhile).
  const taken =
    context.input.steering === "one-at-a-time" ? context.steerBuffer.slice(0, 1) : context.steerBuffer;
  if (taken.length > 0) {
    emitted.push({
      type: "steer.injected",
      messageIds: taken.map((message) => message.id),
      // An edited message steered in as a correction of one the turn already has.
      ...(taken.some((message) => message.editOf !== undefined) ? { edit: true } : {}),
    });
    journal = [...journal, ...taken.map(userItem)];
  }
  if (journal === context.journal) return undefined;
  return {
    emitted,
    patch: {
      journal,
      noticed: [...context.noticed, ...context.noticeBuffer],
      noticeBuffer: [],
      owned: [...context.owned, ...taken],
      steerBuffer: context.steerBuffer.slice(taken.length),
    },
  };
}

/**
 * What the session keeps of a run's output. Messages the run took too late to show to the model (a
 * steer that missed its turn) come back as a follow-up, by arrival, except those a /stop already
 * dropped (no longer owned by the turn); each was acked `steered` before the outcome was known, so
 * `missed` says what became of them. `interrupted`: an interrupting message cut the run off.
 */
export function keepRunOutput(
  context: SessionContext,
  output: RunOutput,
  interrupted: boolean,
): { missed?: SessionEmitted; patch: Partial<SessionContext> } {
  const owned = new Set(context.pending?.messages.map((message) => message.id));
  const kept =
    output.status === "aborted"
      ? output.leftover.filter((message) => owned.has(message.id))
      : output.leftover;
  const leftover = new Set(kept.map((message) => message.id));
  const head = context.queue[0];
  return {
    ...(kept.length > 0
      ? {
          missed: {
            type: "steer.missed" as const,
            runId: output.runId,
            messageIds: kept.map((message) => message.id),
            reason:
              output.status === "done"
                ? "the reply was already written when it arrived: it gets an answer of its own"
                : "the run stopped before its next step: it gets an answer of its own",
          },
        }
      : {}),
    patch: {
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
    },
  };
}
