import { errorMessage, TillerError } from "../errors.js";
import { isTypedTrigger } from "../policy/lane-priority.js";
import type { OwnedMessage } from "../policy/turn-context.js";
import type { RunInput, RunOutput } from "./run.types.js";
import type { PendingTurn, SessionContext, SessionDecision, SessionEvent } from "./session.types.js";

// Pure helpers of the session machine's actions.

/** Messages in arrival order (stable for equal times). */
export function byArrival(messages: OwnedMessage[]): OwnedMessage[] {
  return messages
    .map((message, index) => ({ message, index }))
    .sort((a, b) => a.message.at - b.message.at || a.index - b.index)
    .map(({ message }) => message);
}

/** The decision the ack is built from. */
export function decision(
  event: Extract<SessionEvent, { type: "session.message" }>,
  disposition: SessionDecision["disposition"],
  reason?: string,
  dropped?: string[],
): SessionDecision {
  return {
    messageId: event.message.id,
    disposition,
    setting: event.setting,
    ...(reason ? { reason } : {}),
    ...(dropped && dropped.length > 0 ? { dropped } : {}),
  };
}

/** The output of a turn whose run failed (or never started). */
export function failedOutput(runId: string, error: unknown): RunOutput {
  return {
    runId,
    status: "failed",
    final: "",
    answered: [],
    leftover: [],
    journal: [],
    persisted: 0,
    passes: 0,
    completedTools: [],
    // A typed error (a store failure while preparing the turn) keeps its code.
    error:
      error instanceof TillerError
        ? error.toJSON()
        : { code: "RUN_FAILED", message: errorMessage(error), retryable: true },
    abortReason: null,
    messageSends: 0,
  };
}

/**
 * The run's input, from the `lane.granted` that entered `running` with it; messages that joined while
 * the run was being prepared belong to it too. A grant without a prepared input (a graph walk grants
 * slots without one) starts a bare run from the messages alone.
 */
export function runInputFor(event: SessionEvent, context: SessionContext): RunInput {
  const messages = context.pending?.messages;
  if (event.type === "lane.granted" && event.input) {
    // A background turn also sees the typed messages already waiting for their own turn.
    const noticed = isTypedTrigger(context.pending?.trigger) ? [] : typedWaiting(context.queue);
    return {
      ...event.input,
      messages: messages ?? event.input.messages,
      ...(noticed.length > 0 ? { noticed } : {}),
    };
  }
  return {
    runId: context.runId ?? `${context.key}#${context.turnSeq}`,
    session: context.key,
    kind: context.pending?.kind ?? "turn",
    messages: messages ?? [],
    preamble: [],
    history: [],
    olderUserTexts: [],
    recheck: { enabled: false, maxPasses: 0, minOverlap: 0, complaintPatterns: [] },
    tools: [],
    cancellableTools: [],
  };
}

/**
 * What a turn of these messages was started by: a user's turn as soon as one message was typed (a
 * person waits on it), else the newest message's trigger, with its lane and tools.
 */
export function turnOrigin(
  messages: readonly OwnedMessage[],
): Pick<PendingTurn, "trigger" | "lane" | "tools"> {
  if (messages.length === 0 || messages.some((message) => isTypedTrigger(message.trigger))) return {};
  const last = messages[messages.length - 1]!;
  return {
    ...(last.trigger ? { trigger: last.trigger } : {}),
    ...(last.lane ? { lane: last.lane } : {}),
    ...(last.tools ? { tools: last.tools } : {}),
  };
}

/** Typed messages waiting in the queue: a background turn starting now must see them. */
export function typedWaiting(queue: readonly { kind: string; messages?: OwnedMessage[] }[]): OwnedMessage[] {
  const out: OwnedMessage[] = [];
  for (const item of queue) {
    for (const message of item.messages ?? []) if (isTypedTrigger(message.trigger)) out.push(message);
  }
  return out;
}
