import type { RunInput } from "../machines/run.machine.js";
import type { PendingTurn } from "../machines/session.types.js";
import { laneForTurn } from "../policy/lane-priority.js";
import {
  DROPPED_SUMMARY,
  rolledBackSeqs,
  TURN_NOTE,
  type TurnItem,
  windowToModel,
} from "../policy/turn-context.js";
import type { TranscriptRecord } from "../ports/store.js";
import type { ActorDeps } from "./deps.js";

const RECENT_USER_MESSAGES = 3;

export interface PrepareRunArgs {
  session: string;
  runId: string;
  pending: PendingTurn;
}

/**
 * Builds a run's input: the context window, the tools, and the re-check settings. Returns at once when
 * the session's window is cached and nothing needs writing first (the usual turn of a live session), so
 * the model call starts in the same step as the lane grant; otherwise reads (and repairs) the store.
 */
export function prepareRun(deps: ActorDeps, args: PrepareRunArgs): RunInput | Promise<RunInput> {
  const cached = deps.writer.cachedWindow(args.session);
  if (cached && !args.pending.resumed && cached.length <= deps.config.limits.maxWindowRecords)
    return runInput(deps, args, cached);
  return prepareFromStore(deps, args);
}

async function prepareFromStore(deps: ActorDeps, args: PrepareRunArgs): Promise<RunInput> {
  // A crash may have cut a tool call off: it is closed before the model sees the history again.
  if (args.pending.resumed) await deps.writer.repaired(args.session, args.runId);
  let records = await deps.writer.readWindow(args.session);
  if (records.length > deps.config.limits.maxWindowRecords) {
    // Compaction: the model starts from a fresh window; every record stays in the transcript.
    await deps.writer.rotate(args.session);
    deps.emit("transcript.rotated", {
      session: args.session,
      runId: args.runId,
      windowRecords: records.length,
    });
    records = await deps.writer.readWindow(args.session);
  }
  return runInput(deps, args, records);
}

function runInput(deps: ActorDeps, args: PrepareRunArgs, records: readonly TranscriptRecord[]): RunInput {
  const { pending } = args;
  const olderUserTexts: string[] = [];
  let lastAssistantText: string | undefined;
  const hidden = rolledBackSeqs(records);
  // Most windows hide nothing: no read of `seq` (records of every kind: a megamorphic load) then.
  const hides = hidden.size > 0;
  for (let i = records.length - 1; i >= 0 && olderUserTexts.length < RECENT_USER_MESSAGES; i--) {
    const record = records[i];
    if (hides && record && hidden.has(record.seq)) continue;
    if (record?.role === "user") olderUserTexts.push(record.text);
    // The last reply the user saw, before any older user message: what a short follow-up continues.
    if (
      record?.role === "assistant" &&
      record.delivered &&
      lastAssistantText === undefined &&
      olderUserTexts.length === 0
    )
      lastAssistantText = record.text;
  }
  const recovery = pending.kind === "recovery";
  const preamble: TurnItem[] = pending.summaries.map((text) => ({
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
  const channel = pending.messages.at(-1)?.channel;
  const turnKey = recovery
    ? `recovery:${pending.recovery?.deliveryId ?? pending.recovery?.strandedRunId ?? args.runId}`
    : pending.messages.map((message) => message.id).join(",") || `run:${args.runId}`;
  const stored = pending.resumed
    ? storedIds(records, pending)
    : pending.messages.some((message) => message.stored)
      ? storedIds(records, { ...pending, messages: pending.messages.filter((message) => message.stored) })
      : [];
  const fixed = turnSettings(deps, recovery, pending.tools);
  // Optional fields are set one by one: a spread of a conditional object per field cost more than the
  // rest of this function.
  const input: RunInput = {
    runId: args.runId,
    session: args.session,
    kind: pending.kind,
    turnKey,
    lane: laneForTurn(pending),
    messages: pending.messages,
    preamble,
    history: windowToModel(records),
    olderUserTexts,
    recheck: fixed.recheck,
    tools: fixed.tools,
    cancellableTools: fixed.cancellableTools,
    maxModelCalls: deps.config.limits.maxModelCallsPerTurn,
    // A turn resumed after a restart, or one taking over from a superseded one, may own stored messages.
    storedMessageIds: stored,
  };
  if (channel) input.channel = channel;
  if (pending.trigger) input.trigger = pending.trigger;
  if (lastAssistantText !== undefined) input.lastAssistantText = lastAssistantText;
  if (deps.config.queue.steering === "one-at-a-time") input.steering = "one-at-a-time";
  if (stored.length > 0) Object.assign(input, resumedTurnStart(records, stored));
  return input;
}

/** What every turn of the same kind and tool set shares; runs only read it. */
interface TurnSettings {
  recheck: RunInput["recheck"];
  tools: string[];
  cancellableTools: string[];
}

/**
 * The re-check settings and tool lists of a turn, built once per gateway (and per tool subset) rather
 * than once per turn: the tools are registered when the gateway is created and never change after.
 */
function turnSettings(deps: ActorDeps, recovery: boolean, only: readonly string[] | undefined): TurnSettings {
  // A subset (a subagent's turn) is rare: built for its turn.
  if (only && !recovery)
    return buildSettings(
      deps,
      false,
      [...deps.tools.keys()].filter((name) => only.includes(name)),
    );
  let cache = settingsCache.get(deps);
  if (!cache) {
    cache = {
      user: buildSettings(deps, false, [...deps.tools.keys()]),
      recovery: buildSettings(deps, true, ["message"]),
    };
    settingsCache.set(deps, cache);
  }
  return recovery ? cache.recovery : cache.user;
}

function buildSettings(deps: ActorDeps, recovery: boolean, tools: string[]): TurnSettings {
  const recheck = deps.config.staleReplyRecheck;
  return {
    recheck: {
      // A recovery turn only re-sends; re-drafting it would defeat its purpose.
      enabled: recheck.enabled && !recovery,
      maxPasses: recheck.maxPasses,
      minOverlap: recheck.minOverlap,
      complaintPatterns: recheck.complaintPatterns,
      detector: recheck.detect ? "custom" : "built-in",
    },
    tools,
    cancellableTools: tools.filter((name) => deps.tools.get(name)?.cancellable),
  };
}

const settingsCache = new WeakMap<ActorDeps, { user: TurnSettings; recovery: TurnSettings }>();

/** The model-message index where a resumed turn's first stored message stands in its history. */
function resumedTurnStart(
  records: readonly TranscriptRecord[],
  stored: string[],
): { historyTurnStart?: number } {
  const ids = new Set(stored);
  const first = records.findIndex((record) => record.role === "user" && ids.has(record.messageId));
  return first < 0 ? {} : { historyTurnStart: windowToModel(records.slice(0, first)).length };
}

function storedIds(records: readonly TranscriptRecord[], pending: PendingTurn): string[] {
  const stored = new Set(records.flatMap((record) => (record.role === "user" ? [record.messageId] : [])));
  return pending.messages.filter((message) => stored.has(message.id)).map((message) => message.id);
}
