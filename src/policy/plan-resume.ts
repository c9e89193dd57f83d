import { type RecordBody, type TranscriptRecord, UNDELIVERED_FINAL } from "../ports/store.js";
import { markerDeliveryMode, type VisibleReplies, wantsRecovery } from "./delivery.js";
import { isFinalIntent, unreceiptedIntents } from "./delivery-ledger.js";
import type { PendingTurn, QueueItem } from "./queue-item.js";
import type { QueueSettings } from "./queue-mode.js";
import { type OwnedMessage, RECOVERED, SUBAGENT_CUT_OFF } from "./turn-context.js";

/**
 * What a session persists so that a restarted gateway resumes it exactly once (docs/store.md): the turn
 * in progress (with every message it owns), the queue (follow-ups, collect bursts, recoveries) and
 * the summaries of dropped messages.
 */
export interface PersistedSession {
  version: 1;
  turnSeq: number;
  runId: string | null;
  pending: PendingTurn | null;
  queue: QueueItem[];
  summaries: string[];
  /** The session's `/queue` override, which outlives a restart. */
  override?: QueueSettings | null;
  /**
   * Ids the session accepted (arrival times) that its transcript may not hold: controls, messages
   * dropped, or cleared by `/new` or `/stop` before their turn stored them. A redelivery within the
   * dedupe window is a duplicate after a restart too.
   */
  unstored?: Array<[string, number]>;
}

export interface ResumePlan {
  queue: QueueItem[];
  summaries: string[];
  /** Records to append before the session runs again (a marker the crash cut off). */
  repairs: RecordBody[];
  /** Why, for the event stream. */
  notes: string[];
}

/**
 * Decides how a session continues after a restart, from its saved state and its transcript:
 * - a turn cut off before its final was stored runs again (background priority, messages already in
 *   the transcript are not stored twice);
 * - a turn whose final was stored keeps it: if it was undelivered and the crash came before its marker,
 *   the marker is appended now; a substantive one gets its recovery unless one is queued or done;
 * - a recovery cut off before it ended runs again, once;
 * - a subagent's task (its turn, or one still queued) never runs again: the tool that waited for its
 *   final died with the process, and the parent's cut-off turn, which runs again, starts a new child.
 */
export function planResume(
  state: PersistedSession,
  records: readonly TranscriptRecord[],
  visibleReplies: VisibleReplies,
): ResumePlan {
  const repairs: RecordBody[] = [];
  const notes: string[] = [];
  const cutOff = [...(state.pending ? [state.pending] : []), ...state.queue].filter(isSubagentTask);
  for (const item of cutOff) {
    const ids = item.kind === "recovery" ? [] : item.messages.map((message) => message.id);
    // Stored, so the key stays taken (numbering reads the store's keys) and the story says why.
    repairs.push({
      role: "custom",
      customType: SUBAGENT_CUT_OFF,
      display: false,
      details: { messageIds: ids, ...(item === state.pending ? { runId: state.runId } : {}) },
    });
    notes.push(`subagent task ${ids.join(", ")} was cut off; it does not run again (its parent's turn does)`);
  }
  const queue = state.queue.filter((item) => !isSubagentTask(item));
  const summaries = [...state.summaries];
  const pending = state.pending && isSubagentTask(state.pending) ? null : state.pending;
  // A run id may repeat in a transcript (stores written when ids restarted at #1 in every process, or a
  // custom `newRunId`): only records after this turn's own can belong to it.
  const recovered = {
    has(strandedRunId: string): boolean {
      const finalIndex = records.findLastIndex(
        (record) => record.role === "assistant" && record.runId === strandedRunId,
      );
      return records.some(
        (record, index) =>
          index > finalIndex &&
          record.role === "custom" &&
          record.customType === RECOVERED &&
          String(record.details.strandedRunId) === strandedRunId,
      );
    },
  };
  const queuedRecoveries = new Set(
    queue.flatMap((item) => (item.kind === "recovery" ? [item.strandedRunId] : [])),
  );

  /** Recoveries of finals found stranded, queued at the front once the queue has been walked. */
  const recoveries: QueueItem[] = [];
  const storedIds = new Set(records.flatMap((record) => (record.role === "user" ? [record.messageId] : [])));

  /**
   * Whether the turn that owns `messages` reached its final (run `runId`, or any run when the start was
   * never saved); if it did, a missing marker is appended and a stranded final gets its recovery.
   */
  function settleTurn(messages: readonly OwnedMessage[], runId: string | null): boolean {
    const owned = new Set(messages.map((message) => message.id));
    const turnStart = records.findIndex((record) => record.role === "user" && owned.has(record.messageId));
    if (turnStart < 0) return false;
    // A final sent automatically is stored as its intent first: once that is durable the turn never
    // runs again (an intent without a receipt is resent below).
    const intentIndex = records.findIndex(
      (record, index) => index > turnStart && isFinalIntent(record, runId),
    );
    const finalIndex = records.findIndex(
      (record, index) =>
        index > turnStart && record.role === "assistant" && (runId === null || record.runId === runId),
    );
    const final = records[finalIndex];
    if (final?.role !== "assistant") return intentIndex >= 0;
    if (final.delivered || final.text.trim().length === 0) return true;
    const marked = records
      .slice(finalIndex + 1)
      .some((record) => record.role === "custom" && record.customType === UNDELIVERED_FINAL);
    if (!marked) {
      repairs.push({
        role: "custom",
        customType: UNDELIVERED_FINAL,
        display: false,
        details: {
          deliveryMode: markerDeliveryMode(visibleReplies),
          delivered: false,
          finalSeq: final.seq,
          finalTextLength: final.text.length,
        },
      });
      notes.push(`final of ${final.runId} was stored but not marked; marker appended`);
    }
    if (
      wantsRecovery(final.text, visibleReplies) &&
      !recovered.has(final.runId) &&
      !queuedRecoveries.has(final.runId)
    ) {
      recoveries.push({
        kind: "recovery",
        text: final.text,
        strandedRunId: final.runId,
        deliveryMode: markerDeliveryMode(visibleReplies),
        resumed: true,
        ...(final.deliveryId ? { deliveryId: final.deliveryId } : {}),
      });
      queuedRecoveries.add(final.runId);
      notes.push(`recovery of ${final.runId} queued after restart`);
    }
    return true;
  }

  // Sends a crash left without a receipt: each is resent once, as it was, under its deliveryId.
  const open = unreceiptedIntents(records);
  const openIds = new Set(open.map((intent) => intent.deliveryId));
  const resends: QueueItem[] = open.map((intent) => ({
    kind: "recovery",
    text: intent.text,
    strandedRunId: intent.runId,
    deliveryMode: "automatic",
    resumed: true,
    deliveryId: intent.deliveryId,
    intent: { kind: intent.kind, final: intent.final },
    ...(intent.replyTo ? { replyTo: intent.replyTo } : {}),
    ...(intent.thread ? { thread: intent.thread } : {}),
    ...(intent.parts ? { parts: intent.parts } : {}),
  }));
  for (const intent of open)
    notes.push(`${intent.kind} ${intent.deliveryId} had no receipt; it is resent once`);

  if (pending?.kind === "recovery" && pending.recovery) {
    if (
      !(pending.recovery.deliveryId && openIds.has(pending.recovery.deliveryId)) &&
      !pending.recovery.intent &&
      !recovered.has(pending.recovery.strandedRunId) &&
      !queuedRecoveries.has(pending.recovery.strandedRunId)
    ) {
      queue.unshift({ ...pending.recovery, resumed: true });
      notes.push(`recovery of ${pending.recovery.strandedRunId} was cut off; it runs again`);
    }
  } else if (pending && pending.messages.length > 0) {
    const settled = settleTurn(pending.messages, state.runId);
    if (!settled && pending.interrupted) {
      // An acknowledged interrupt: the cut-off turn never runs again. What it never showed the model
      // joins the interrupting turn (queued behind it in the saved state).
      const stored = new Set(storedIds);
      const unshown = pending.messages.filter((message) => !stored.has(message.id));
      const head = queue.find((item) => item.kind === "followup");
      if (unshown.length > 0 && head?.kind === "followup") head.messages.unshift(...unshown);
      else if (unshown.length > 0) queue.unshift({ kind: "followup", messages: unshown, resumed: true });
      summaries.unshift(...pending.summaries);
      notes.push(
        `turn ${state.runId ?? "(not started)"} was interrupted before the crash; it does not run again`,
      );
    } else if (settled) {
      // Messages that joined the turn too late for its final (never stored, never shown to the model)
      // would have come back as a follow-up: the crash came before that was saved.
      const stored = new Set(storedIds);
      const unshown = pending.messages.filter((message) => !stored.has(message.id));
      if (unshown.length > 0) {
        queue.unshift({ kind: "followup", messages: unshown, resumed: true });
        notes.push(
          `${unshown.map((message) => message.id).join(", ")} joined a turn after its final; answered next`,
        );
      }
    } else {
      queue.unshift({ kind: "followup", messages: pending.messages, resumed: true });
      summaries.unshift(...pending.summaries);
      notes.push(`turn ${state.runId ?? "(not started)"} was cut off; it runs again`);
    }
  }

  // A turn can start, and store its messages, before the saved state says it left the queue: a queued
  // item whose messages are already in the transcript is a turn that ran (settled like the pending one
  // above) or was cut off (it runs again, its stored messages not stored twice).
  for (let index = 0; index < queue.length; index++) {
    const item = queue[index]!;
    if (item.kind === "recovery" || (item.kind === "followup" && item.resumed)) continue;
    if (!item.messages.some((message) => storedIds.has(message.id))) continue;
    const ids = item.messages.map((message) => message.id).join(", ");
    if (settleTurn(item.messages, null)) {
      queue.splice(index--, 1);
      notes.push(`the turn of ${ids} had ended before its start was saved; it does not run again`);
    } else {
      queue[index] = { kind: "followup", messages: item.messages, resumed: true };
      notes.push(`the turn of ${ids} was cut off before its start was saved; it runs again`);
    }
  }
  // A queued recovery that already ran (its outcome is stored before the saved state said so), or whose
  // send a crash cut off (the open intent's resend covers it), does not run again; nor does a resend
  // queued twice.
  const kept = queue.filter((item) => {
    if (item.kind !== "recovery") return true;
    if (item.intent) return false;
    if (item.deliveryId && openIds.has(item.deliveryId)) return false;
    return !recovered.has(item.strandedRunId);
  });
  queue.length = 0;
  queue.push(...resends, ...recoveries, ...kept);
  return { queue, summaries, repairs, notes };
}

/** A turn (or queued item) that is a subagent's task, started by a tool of its parent's turn. */
function isSubagentTask(item: PendingTurn | QueueItem): boolean {
  if (item.kind === "recovery" || item.messages.length === 0) return false;
  return item.messages.every((message) => message.trigger === "subagent");
}
