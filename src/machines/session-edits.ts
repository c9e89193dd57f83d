// An edited message that arrives while the message it edits still waits replaces it where it waits:
// in the queue, or in the turn about to start. What the session emits and keeps for each.
import type { QueueItem, SessionContext, SessionEmitted, SessionEvent } from "./session.types.js";
import { decision } from "./session-context.js";

type MessageEvent = Extract<SessionEvent, { type: "session.message" }>;

/** The edited message leaves: it was replaced by its edit, never answered. */
function dropped(event: MessageEvent): SessionEmitted {
  return {
    type: "message.dropped",
    messageId: event.message.editOf!,
    reason: `replaced by its edit ${event.message.id}`,
  };
}

/** The edit takes the queued message's place (and its arrival, so later ones do not overtake it). */
export function replaceQueued(
  context: SessionContext,
  event: MessageEvent,
): { emitted: SessionEmitted; patch: Partial<SessionContext> } {
  const edit = event.message;
  const replaced = context.queue.find(
    (item) => item.kind !== "recovery" && item.messages.some((m) => m.id === edit.editOf),
  );
  const queue = context.queue.map((item): QueueItem => {
    if (item.kind === "recovery" || !item.messages.some((m) => m.id === edit.editOf)) return item;
    // In place: the edit keeps the replaced message's arrival, so it is not overtaken by later ones.
    return {
      ...item,
      messages: item.messages.map((m) => (m.id === edit.editOf ? { ...edit, at: m.at } : m)),
    };
  });
  return {
    emitted: dropped(event),
    patch: {
      queue,
      lastDecision: decision(
        event,
        replaced?.kind === "collect" ? "collected" : "queued",
        `it replaces your earlier message ${edit.editOf}, which had not been answered yet`,
      ),
    },
  };
}

/** The edit takes its message's place in the turn about to start. */
export function replacePending(
  context: SessionContext & { pending: NonNullable<SessionContext["pending"]> },
  event: MessageEvent,
): { emitted: SessionEmitted; patch: Partial<SessionContext> } {
  const edit = event.message;
  return {
    emitted: dropped(event),
    patch: {
      pending: {
        ...context.pending,
        messages: context.pending.messages.map((m) => (m.id === edit.editOf ? { ...edit, at: m.at } : m)),
      },
      lastDecision: decision(event, "steered", `it replaces ${edit.editOf} in the reply about to start`),
    },
  };
}
