import { errorMessage, isTillerErrorCode } from "../errors.js";
import { MESSAGE_TOOL } from "../policy/delivery.js";
import { isTypedTrigger } from "../policy/lane-priority.js";
import { assessDraft, compilePatterns, type DraftFacts } from "../policy/stale-reply.js";
import {
  INTERIM_TEXT,
  journalToModel,
  NOTICED,
  type OwnedMessage,
  type ToolCallRequest,
  TURN_NOTE,
  type TurnItem,
} from "../policy/turn-context.js";
import type { CallModelInput, RunContext, RunError, RunInput, RunVerdict } from "./run.types.js";

// Pure helpers of the run machine's actions and guards: journal items and the model call's input.

export function userItem(message: OwnedMessage): TurnItem {
  return {
    role: "user",
    text: message.text,
    messageId: message.id,
    arrivedAt: message.at,
    channel: message.channel,
    ...(message.sender ? { sender: message.sender } : {}),
    ...(message.replyTo ? { replyTo: message.replyTo } : {}),
    ...(message.thread ? { thread: message.thread } : {}),
  };
}

const NOTICE_TEXT =
  "The user wrote while this task was running (below). It is answered in its own turn next; this reply " +
  "must not ignore or contradict it.";

/** Typed messages a background turn sees but does not answer: a note, then each message. */
export function noticeItems(messages: readonly OwnedMessage[]): TurnItem[] {
  if (messages.length === 0) return [];
  return [
    { role: "custom", customType: TURN_NOTE, display: false, details: { text: NOTICE_TEXT } },
    ...messages.map(
      (message): TurnItem => ({
        role: "custom",
        customType: NOTICED,
        display: false,
        details: { messageId: message.id, text: message.text },
      }),
    ),
  ];
}

/** The journal a run starts with: the preamble, the messages not stored yet, what it was shown. */
export function startJournal(input: RunInput): TurnItem[] {
  const stored = input.storedMessageIds;
  const journal = [...input.preamble];
  for (const message of input.messages) if (!stored?.includes(message.id)) journal.push(userItem(message));
  if (input.noticed && input.noticed.length > 0) journal.push(...noticeItems(input.noticed));
  return journal;
}

export function assistantNote(text: string): TurnItem {
  // Text that accompanied tool calls: part of the conversation, never a final.
  return { role: "custom", customType: INTERIM_TEXT, display: true, details: { text } };
}

export function toolResultItem(
  context: RunContext,
  call: ToolCallRequest,
  status: "done" | "skipped" | "cancelled" | "failed",
  result: unknown,
): TurnItem {
  return { role: "toolResult", callId: call.callId, status, result, runId: context.input.runId };
}

export function callModelInput(context: RunContext): CallModelInput {
  return {
    runId: context.input.runId,
    session: context.input.session,
    call: context.call,
    recheck: context.recheckPending,
    recovery: context.input.kind === "recovery",
    // One copy of the window per call (the model may keep it; the history array is shared by turns).
    context: context.input.history.concat(journalToModel(context.journal)),
    turnStart: context.input.historyTurnStart ?? context.input.history.length,
    tools: context.input.tools,
    unpersisted: context.journal.slice(context.persisted),
    journalOffset: context.persisted,
    ...(context.input.trigger ? { trigger: context.input.trigger } : {}),
  };
}

/** The newest message the turn has (owned, steering, or seen while waiting for its own turn). */
export function newestMessage(context: RunContext): OwnedMessage | undefined {
  let newest: OwnedMessage | undefined;
  for (const list of [context.owned, context.noticed, context.steerBuffer, context.noticeBuffer]) {
    for (const message of list) if (!newest || message.at >= newest.at) newest = message;
  }
  return newest;
}

/** Whether a person wrote the newest message of the turn (not a schedule or a heartbeat). */
export function newestIsTyped(context: RunContext): boolean {
  return isTypedTrigger(newestMessage(context)?.trigger);
}

/** A turn nobody typed: every message it started from has a trigger (a schedule, a heartbeat, ...). */
export function isBackgroundTurn(context: RunContext): boolean {
  const first = context.input.messages;
  return first.length > 0 && first.every((message) => !isTypedTrigger(message.trigger));
}

export function isCancellable(context: RunContext): boolean {
  const call = context.pendingCalls[context.toolIndex];
  return call !== undefined && context.input.cancellableTools.includes(call.name);
}

export function toRunError(error: unknown): RunError {
  // A Tiller error keeps its code; anything else a model adapter throws is a model failure.
  if (error && typeof error === "object" && "code" in error && isTillerErrorCode(error.code)) {
    const message = "message" in error && error.message !== undefined ? String(error.message) : error.code;
    return { code: error.code, message, retryable: "retryable" in error && Boolean(error.retryable) };
  }
  return { code: "MODEL_FAILED", message: errorMessage(error), retryable: true };
}

export function maxCalls(context: RunContext): number {
  return context.input.maxModelCalls ?? 25;
}

/** Calls of the `message` tool in the journal that completed: each one is a visible send. */
export function messageSends(journal: readonly TurnItem[]): number {
  const calls = new Set<string>();
  let sends = 0;
  for (const item of journal) {
    if (item.role === "toolCall" && item.name === MESSAGE_TOOL) calls.add(item.callId);
    if (item.role === "toolResult" && item.status === "done" && calls.has(item.callId)) sends++;
  }
  return sends;
}

/**
 * What the re-check judges the draft on: the newest user message the turn owns, the older ones, and
 * the assistant's last visible message before the newest (a text it sent with tool calls in this turn,
 * else the last delivered reply before the turn), so a short follow-up is read in its conversation.
 */
export function draftFacts(context: RunContext): DraftFacts {
  const newest = newestMessage(context);
  const older = [
    ...context.owned
      .slice(0, -1)
      .reverse()
      .map((message) => message.text),
    ...context.input.olderUserTexts,
  ];
  let lastAssistant = context.input.lastAssistantText;
  for (const item of context.journal) {
    if (item.role === "user" && item.messageId === newest?.id) break;
    if (item.role === "custom" && item.customType === INTERIM_TEXT)
      lastAssistant = String(item.details.text ?? "");
  }
  return {
    draft: context.draft,
    newest: newest?.text ?? "",
    older,
    newerArrived: context.steerBuffer.length > 0 || context.noticeBuffer.length > 0,
    previousUser: older[0],
    lastAssistant,
  };
}

/** The built-in signals' verdict on the current draft. */
export function builtInVerdict(context: RunContext, fallback = false): RunVerdict {
  // A turn nobody typed answers its own task: only a user message it has not seen makes it stale.
  if (!newestIsTyped(context)) {
    const newer = context.steerBuffer.length > 0 || context.noticeBuffer.length > 0;
    return newer
      ? {
          stale: true,
          reason: "newer-message",
          detail: "a user message arrived during the turn",
          detector: "built-in",
          ...(fallback ? { fallback: true } : {}),
        }
      : { stale: false, detector: "built-in", ...(fallback ? { fallback: true } : {}) };
  }
  const verdict = assessDraft(draftFacts(context), {
    complaintPatterns: compilePatterns(context.input.recheck.complaintPatterns),
    minOverlap: context.input.recheck.minOverlap,
  });
  return { ...verdict, detector: "built-in", ...(fallback ? { fallback: true } : {}) };
}
