import type { ModelMessage, ToolCallRequest } from "../ports/model.js";
import { type RecordBody, type TranscriptRecord, UNDELIVERED_FINAL } from "../ports/store.js";
import type { Sender } from "./sender.js";

export type { ModelMessage, ToolCallRequest };

/** A user message as a turn owns it. */
export interface OwnedMessage {
  id: string;
  text: string;
  channel: string;
  /** Arrival time on the gateway clock. */
  at: number;
  /** Who wrote it; absent: the session's single anonymous user. */
  sender?: Sender;
  /** The platform id an answer replies to, and its thread: handed back on the answer's send. */
  replyTo?: string;
  thread?: string;
  /** What started it when nobody typed it (`cron`, `heartbeat`, `subagent`, ...); absent for a user's message. */
  trigger?: string;
  /** For a triggered turn: the workload lane when not the trigger's own (a subagent of a scheduled job). */
  lane?: string;
  /** For a triggered turn: the tools it may call, when fewer than all (a subagent's). */
  tools?: string[];
  /** An edit: the id of the message it replaces. */
  editOf?: string;
  /** Already in the transcript (a turn that saw it was superseded): the next turn does not store it again. */
  stored?: boolean;
}

/** Items of a turn's journal are transcript record bodies, stored in order. */
export type TurnItem = RecordBody;

export const RECHECK_NOTE = "tiller.recheck";
export const SUPERSEDED_DRAFT = "tiller.superseded-draft";
export const DROPPED_SUMMARY = "tiller.dropped-summary";
export const INTERIM_TEXT = "tiller.interim";
/** An instruction to the model for this turn only (recovery turns). */
export const TURN_NOTE = "tiller.note";
/** A user message that arrived during a background turn and waits for its own turn: the turn sees it. */
export const NOTICED = "tiller.noticed";
/** A stranded final that a recovery later delivered. */
export const RECOVERED = "tiller.recovered";
/** A subagent's turn a crash cut off: it never runs again (its parent's turn starts a new child). */
export const SUBAGENT_CUT_OFF = "tiller.subagent-cut-off";

/**
 * A turn cut off in `rollback` mode: `details` holds `{ runId, messageIds }`. Its records stay in the
 * transcript, but from its first user message (or first record of the run) up to this marker, none
 * reaches a later model call.
 */
export const ROLLED_BACK = "tiller.rolled-back";

const UNDELIVERED_NOTE = "[note: the assistant reply above was never shown to the user]";
const RECOVERED_NOTE = "[note: the undelivered reply above was delivered to the user later]";

/**
 * What the model sees of stored records: conversation and tool traffic, plus a note after a final that
 * never reached the user. Control records of earlier turns (re-check instructions, discarded drafts)
 * are left out of history.
 */
export function historyToModel(records: readonly TranscriptRecord[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  const hidden = rolledBackSeqs(records);
  for (const record of records) {
    if (hidden.has(record.seq)) continue;
    const message = recordToModel(record, false);
    if (message) out.push(message);
  }
  return out;
}

/**
 * {@link historyToModel} of a context window, remembered with the window: a cached window only grows
 * (by push) until it is replaced, so the next turn converts just the records appended since. Returns a
 * new array whenever the window grew, never one handed out before with more messages in it.
 */
export function windowToModel(records: readonly TranscriptRecord[]): ModelMessage[] {
  const known = converted.get(records);
  if (known?.records === records.length) return known.messages;
  const added = known && known.records < records.length ? appended(records, known.records) : undefined;
  const messages = known && added ? known.messages.concat(added) : historyToModel(records);
  converted.set(records, { records: records.length, messages });
  return messages;
}

/**
 * The records appended from `from` on, as the model sees them; undefined when one of them is a rollback
 * marker, which hides records converted before it (the whole window is converted again). No slice: a
 * slice per turn was a new array for the rollback cache to scan and remember.
 */
function appended(records: readonly TranscriptRecord[], from: number): ModelMessage[] | undefined {
  const out: ModelMessage[] = [];
  for (let i = from; i < records.length; i++) {
    const record = records[i]!;
    if (isRollback(record)) return undefined;
    const message = recordToModel(record, false);
    if (message) out.push(message);
  }
  return out;
}

const converted = new WeakMap<readonly TranscriptRecord[], { records: number; messages: ModelMessage[] }>();

/** The current turn's journal as the model sees it (re-check notes and discarded drafts included). */
export function journalToModel(items: readonly TurnItem[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const item of items) {
    const message = recordToModel(item, true);
    if (message) out.push(message);
  }
  return out;
}

function recordToModel(record: RecordBody, inTurn: boolean): ModelMessage | undefined {
  switch (record.role) {
    case "user":
      return {
        role: "user",
        text: record.text,
        messageId: record.messageId,
        ...(record.sender ? { sender: record.sender } : {}),
      };
    case "assistant":
      return { role: "assistant", text: record.text };
    case "toolCall":
      return { role: "toolCall", callId: record.callId, name: record.name, args: record.args };
    case "toolResult":
      return { role: "toolResult", callId: record.callId, status: record.status, result: record.result };
    case "custom":
      if (record.customType === UNDELIVERED_FINAL) return { role: "note", text: UNDELIVERED_NOTE };
      if (record.customType === DROPPED_SUMMARY)
        return { role: "note", text: String(record.details.text ?? "") };
      if (record.customType === RECOVERED) {
        return record.details.recovered === true ? { role: "note", text: RECOVERED_NOTE } : undefined;
      }
      if (record.customType === INTERIM_TEXT)
        return { role: "assistant", text: String(record.details.text ?? "") };
      if (!inTurn) return undefined;
      if (record.customType === TURN_NOTE) return { role: "note", text: String(record.details.text ?? "") };
      if (record.customType === NOTICED) {
        return {
          role: "user",
          text: String(record.details.text ?? ""),
          messageId: String(record.details.messageId ?? ""),
        };
      }
      if (record.customType === RECHECK_NOTE)
        return { role: "note", text: String(record.details.instruction ?? "") };
      if (record.customType === SUPERSEDED_DRAFT)
        return { role: "assistant", text: String(record.details.text ?? "") };
      return undefined;
  }
}

/**
 * The seqs of records a rollback hid from model calls: for each `tiller.rolled-back` marker, from the
 * first record of its turn (a user record it names, or a record of its run) up to the marker itself.
 */
export function rolledBackSeqs(records: readonly TranscriptRecord[]): Set<number> {
  const known = hiddenOf.get(records);
  // A cached window only grows; records appended since the last look hide nothing unless one of them is
  // a rollback marker (it hides records before it), so a turn need not scan its whole window again.
  if (known && known.records <= records.length) {
    let marker = false;
    for (let i = known.records; i < records.length && !marker; i++) marker = isRollback(records[i]!);
    if (!marker) {
      known.records = records.length;
      return known.hidden;
    }
  }
  const hidden = scanRolledBack(records);
  hiddenOf.set(records, { records: records.length, hidden });
  return hidden;
}

/** What {@link rolledBackSeqs} found in a window, and up to which length (callers only read the set). */
const hiddenOf = new WeakMap<readonly TranscriptRecord[], { records: number; hidden: Set<number> }>();

function isRollback(record: TranscriptRecord): boolean {
  return record.role === "custom" && record.customType === ROLLED_BACK;
}

function scanRolledBack(records: readonly TranscriptRecord[]): Set<number> {
  const hidden = new Set<number>();
  records.forEach((marker, end) => {
    if (marker.role !== "custom" || marker.customType !== ROLLED_BACK) return;
    const runId = String(marker.details.runId ?? "");
    const ids = new Set(
      Array.isArray(marker.details.messageIds) ? marker.details.messageIds.map(String) : [],
    );
    const start = records.findIndex(
      (record, index) =>
        index < end &&
        ((record.role === "user" && ids.has(record.messageId)) ||
          ("runId" in record && record.runId === runId && runId !== "")),
    );
    for (let index = start < 0 ? end : start; index <= end; index++) hidden.add(records[index]!.seq);
  });
  return hidden;
}
