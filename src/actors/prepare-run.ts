import { fromPromise } from "xstate";
import type { RecordBody, TranscriptRecord } from "../adapters/store.js";
import type { RunInput } from "../machines/run.machine.js";
import type { PendingTurn } from "../machines/session.types.js";
import { DROPPED_SUMMARY, historyToModel, TURN_NOTE, type TurnItem } from "../turn.js";
import type { ActorDeps } from "./deps.js";

const RECENT_USER_MESSAGES = 3;

/** Builds a run's input: the context window from the store, the tools, and the re-check settings. */
export function createPrepareRun(deps: ActorDeps) {
  return fromPromise<RunInput, { session: string; runId: string; pending: PendingTurn }>(
    async ({ input }) => {
      let records = await deps.writer.readWindow(input.session);
      if (input.pending.resumed) {
        // A crash may have cut a tool call off: close it before the model sees the history again.
        const closing = danglingToolResults(records, input.runId);
        if (closing.length > 0) {
          await deps.writer.append(input.session, closing);
          records = await deps.writer.readWindow(input.session);
        }
      }
      if (records.length > deps.config.limits.maxWindowRecords) {
        // Compaction: the model starts from a fresh window; every record stays in the transcript.
        await deps.writer.rotate(input.session);
        deps.emit("transcript.rotated", {
          session: input.session,
          runId: input.runId,
          windowRecords: records.length,
        });
        records = await deps.writer.readWindow(input.session);
      }
      const stored = new Set(records.flatMap((record) => (record.role === "user" ? [record.messageId] : [])));
      const olderUserTexts: string[] = [];
      for (let i = records.length - 1; i >= 0 && olderUserTexts.length < RECENT_USER_MESSAGES; i--) {
        const record = records[i];
        if (record?.role === "user") olderUserTexts.push(record.text);
      }
      const recovery = input.pending.kind === "recovery";
      const preamble: TurnItem[] = input.pending.summaries.map((text) => ({
        role: "custom",
        customType: DROPPED_SUMMARY,
        display: false,
        details: { text },
      }));
      if (recovery) {
        preamble.push({
          role: "custom",
          customType: TURN_NOTE,
          display: false,
          details: {
            text:
              "Your previous reply was never shown to the user. Send it now with the message tool " +
              '(action "send"); do not answer anything else.',
          },
        });
      }
      deps.runFacts.set(input.runId, { messageSends: 0, kind: input.pending.kind });
      const toolNames = recovery ? ["message"] : [...deps.tools.keys()];
      return {
        runId: input.runId,
        session: input.session,
        kind: input.pending.kind,
        messages: input.pending.messages,
        preamble,
        history: historyToModel(records),
        olderUserTexts,
        recheck: {
          // A recovery turn only re-sends; re-drafting it would defeat its purpose.
          enabled: deps.config.staleReplyRecheck.enabled && !recovery,
          maxPasses: deps.config.staleReplyRecheck.maxPasses,
          minOverlap: deps.config.staleReplyRecheck.minOverlap,
          complaintPatterns: deps.config.staleReplyRecheck.complaintPatterns,
        },
        tools: toolNames,
        cancellableTools: toolNames.filter((name) => deps.tools.get(name)?.cancellable),
        autoStart: true,
        maxModelCalls: deps.config.limits.maxModelCallsPerTurn,
        storedMessageIds: input.pending.messages
          .filter((message) => stored.has(message.id))
          .map((message) => message.id),
      };
    },
  );
}

function danglingToolResults(records: readonly TranscriptRecord[], runId: string): RecordBody[] {
  const open = new Map<string, string>();
  for (const record of records) {
    if (record.role === "toolCall") open.set(record.callId, record.runId);
    if (record.role === "toolResult") open.delete(record.callId);
  }
  return [...open.keys()].map((callId) => ({
    role: "toolResult" as const,
    callId,
    status: "cancelled" as const,
    result: "cut off by a restart: the outcome of this call is unknown",
    runId,
  }));
}
