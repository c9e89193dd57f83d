import { errorMessage, isTillerErrorCode } from "../errors.js";
import { MESSAGE_TOOL } from "../policy/delivery.js";
import { assessDraft, compilePatterns, type DraftFacts } from "../policy/stale-reply.js";
import type { OwnedMessage, ToolCallRequest, TurnItem } from "../policy/turn-context.js";
import { INTERIM_TEXT, journalToModel } from "../policy/turn-context.js";
import type { CallModelInput, RunContext, RunError, RunVerdict } from "./run.types.js";

// Pure helpers of the run machine's actions and guards: journal items and the model call's input.

export function userItem(message: OwnedMessage): TurnItem {
  return {
    role: "user",
    text: message.text,
    messageId: message.id,
    channel: message.channel,
    ...(message.sender ? { sender: message.sender } : {}),
  };
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
    context: [...context.history, ...journalToModel(context.journal)],
    turnStart: context.input.historyTurnStart ?? context.history.length,
    tools: context.input.tools,
    unpersisted: context.journal.slice(context.persisted),
    journalOffset: context.persisted,
  };
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
  const newest = [...context.owned, ...context.steerBuffer].at(-1);
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
    newerArrived: context.steerBuffer.length > 0,
    previousUser: older[0],
    lastAssistant,
  };
}

/** The built-in signals' verdict on the current draft. */
export function builtInVerdict(context: RunContext, fallback = false): RunVerdict {
  const verdict = assessDraft(draftFacts(context), {
    complaintPatterns: compilePatterns(context.input.recheck.complaintPatterns),
    minOverlap: context.input.recheck.minOverlap,
  });
  return { ...verdict, detector: "built-in", ...(fallback ? { fallback: true } : {}) };
}
