import type { ResolvedQueueSetting } from "../policy/queue-mode.js";
import { sameSender } from "../policy/sender.js";
import type { OwnedMessage } from "../policy/turn-context.js";
import type { PendingTurn, QueueItem, SessionContext } from "./session.types.js";
import { turnOrigin } from "./session-context.js";

/**
 * Pure operations on a session's queue, called from the session machine's actions. Recoveries sit at
 * the front and are never dropped; follow-ups and collect bursts keep arrival order.
 */
export interface AdmitResult {
  queue: QueueItem[];
  summaries: string[];
  dropped: Array<{ messageId: string; reason: string; summary?: string }>;
  rejected: boolean;
  collected: boolean;
  reason?: string;
}

export function admitToQueue(
  queue: readonly QueueItem[],
  summaries: readonly string[],
  message: OwnedMessage,
  setting: ResolvedQueueSetting,
  /** Why a message that wanted to steer (or interrupt) waits instead; the default fits a turn being delivered. */
  waitsBehind = "the reply was already being finalized; it is answered next",
): AdmitResult {
  let next = [...queue];
  const nextSummaries = [...summaries];
  const dropped: AdmitResult["dropped"] = [];
  while (countMessages(next) >= setting.cap) {
    if (setting.drop === "new") {
      return {
        queue: [...queue],
        summaries: [...summaries],
        dropped,
        rejected: true,
        collected: false,
        reason: `the queue is full (${setting.cap} messages waiting)`,
      };
    }
    const removed = dropOldest(next);
    if (!removed) break;
    next = removed.queue;
    if (setting.drop === "summarize") {
      const summary = `[dropped while busy] ${oneLine(removed.message.text)}`;
      nextSummaries.push(summary);
      dropped.push({ messageId: removed.message.id, reason: "queue cap: summarized", summary });
    } else dropped.push({ messageId: removed.message.id, reason: "queue cap: dropped oldest" });
  }
  if (setting.mode === "collect") {
    // A burst is one person's: another sender's messages collect into a burst of their own.
    const index = next.findIndex(
      (item) =>
        item.kind === "collect" &&
        item.channel === message.channel &&
        sameSender(item.messages[0]?.sender, message.sender),
    );
    const item = next[index];
    if (item && item.kind === "collect") {
      next[index] = { ...item, messages: [...item.messages, message] };
    } else next.push({ kind: "collect", channel: message.channel, messages: [message] });
    return { queue: next, summaries: nextSummaries, dropped, rejected: false, collected: true };
  }
  next.push({ kind: "followup", messages: [message] });
  const reason = setting.mode === "followup" ? undefined : waitsBehind;
  return {
    queue: next,
    summaries: nextSummaries,
    dropped,
    rejected: false,
    collected: false,
    ...(reason ? { reason } : {}),
  };
}

/**
 * Puts messages that a run took too late to show back in the queue as one follow-up, by arrival: behind
 * recoveries and work that arrived before them, ahead of work that arrived after, so nothing queued
 * earlier is overtaken (docs/architecture.md).
 */
export function requeueLeftover(queue: readonly QueueItem[], messages: readonly OwnedMessage[]): QueueItem[] {
  if (messages.length === 0) return [...queue];
  const arrived = Math.min(...messages.map((message) => message.at));
  const index = queue.findIndex(
    (item) => item.kind !== "recovery" && (item.messages[0]?.at ?? Number.POSITIVE_INFINITY) > arrived,
  );
  const item: QueueItem = { kind: "followup", messages: [...messages] };
  return index === -1 ? [...queue, item] : [...queue.slice(0, index), item, ...queue.slice(index)];
}

export function takeNextTurn(
  queue: readonly QueueItem[],
  summaries: readonly string[],
): { pending: PendingTurn | null; queue: QueueItem[]; summaries: string[] } {
  const [head, ...rest] = queue;
  if (!head) return { pending: null, queue: [], summaries: [...summaries] };
  if (head.kind === "recovery") {
    return {
      pending: {
        kind: "recovery",
        messages: [],
        summaries: [],
        recovery: head,
        ...(head.resumed ? { resumed: true } : {}),
      },
      queue: rest,
      summaries: [...summaries],
    };
  }
  const resumed = head.kind === "followup" && head.resumed === true;
  return {
    pending: {
      kind: "turn",
      messages: head.messages,
      summaries: [...summaries],
      ...(resumed ? { resumed } : {}),
      ...turnOrigin(head.messages),
    },
    queue: rest,
    summaries: [],
  };
}

export function countMessages(queue: readonly QueueItem[]): number {
  let count = 0;
  for (const item of queue) if (item.kind !== "recovery") count += item.messages.length;
  return count;
}

function dropOldest(queue: QueueItem[]): { queue: QueueItem[]; message: OwnedMessage } | undefined {
  const index = queue.findIndex((item) => item.kind !== "recovery" && item.messages.length > 0);
  const item = queue[index];
  if (!item || item.kind === "recovery") return undefined;
  const [message, ...remaining] = item.messages;
  const next = [...queue];
  if (remaining.length === 0) next.splice(index, 1);
  else next[index] = { ...item, messages: remaining };
  return { queue: next, message: message! };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 100 ? `${flat.slice(0, 97)}...` : flat;
}

/** A turn the lane refused goes back to the front of the queue, as it was (a recovery stays one). */
export function requeuePending(
  pending: PendingTurn,
  context: Pick<SessionContext, "queue" | "summaries">,
): Pick<SessionContext, "queue" | "summaries" | "pending"> {
  const item: QueueItem | undefined =
    pending.kind === "recovery" && pending.recovery
      ? pending.recovery
      : pending.messages.length > 0
        ? { kind: "followup", messages: pending.messages }
        : undefined;
  return {
    queue: item ? [item, ...context.queue] : context.queue,
    summaries: [...pending.summaries, ...context.summaries],
    pending: null,
  };
}
