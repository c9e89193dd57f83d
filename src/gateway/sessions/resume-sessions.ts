import type { TranscriptWriter } from "../../adapters/transcript-writer.js";
import type { GatewayConfig } from "../../config.js";
import type { EmitEvent } from "../../events.js";
import { type PersistedSession, planResume } from "../../policy/plan-resume.js";
import type { TranscriptStore } from "../../ports/store.js";
import type { SessionPersistence } from "./session-persistence.js";
import type { SessionRegistry } from "./session-registry.js";

export interface ResumeDeps {
  store: TranscriptStore;
  writer: TranscriptWriter;
  config: GatewayConfig;
  persistence: SessionPersistence;
  registry: SessionRegistry;
  channelNames: readonly string[];
  emit: EmitEvent;
}

/**
 * Resumes every session a previous process left with work, exactly once: repairs first (a final stored
 * without its marker gets it), then the cut-off turn, follow-ups and recoveries run again in the
 * background lane. Sessions with nothing left have their saved state cleared.
 *
 * @example
 * ```ts
 * await resumeSessions({ store, writer, config, persistence, registry, channelNames: ["web"], emit });
 * ```
 */
export async function resumeSessions(deps: ResumeDeps): Promise<void> {
  for (const key of await deps.store.sessions()) await resumeSession(deps, key);
}

/**
 * Resumes one session from the store: what a restart does for each session, and what a process of a
 * cluster does when it takes a session over from an owner that died. False when nothing was stored.
 */
export async function resumeSession(deps: ResumeDeps, key: string): Promise<boolean> {
  const { store, writer, persistence, registry } = deps;
  const state = (await store.loadState(key)) as PersistedSession | null;
  if (state?.version !== 1) return false;
  const records = await writer.readWindow(key);
  const plan = planResume(state, records, deps.config.delivery.visibleReplies);
  await writer.append(key, plan.repairs);
  for (const note of plan.notes) deps.emit("session.resumed", { session: key, note });
  const entry = registry.memory(key, deps.channelNames[0]!);
  entry.turnSeq = state.turnSeq;
  entry.savedEmpty = false;
  entry.savedAs = undefined;
  entry.override = state.override ?? null;
  // Channels redeliver what a dead process may not have acknowledged: ids this session already
  // accepted (stored, or owned by the turn and queue being resumed) stay duplicates.
  await persistence.rememberStoredIds(key, entry);
  entry.covered ??= new Set();
  // Ids the transcript does not hold (controls, dropped or cleared messages) came with the state.
  const inWindow = new Set(records.flatMap((record) => (record.role === "user" ? [record.messageId] : [])));
  const unstored = (state.unstored ?? []).filter(([id]) => !inWindow.has(id));
  for (const [id, at] of unstored) {
    entry.seen.set(id, at);
    persistence.accepted(entry, id, at);
  }
  for (const item of [...(state.pending ? [state.pending] : []), ...state.queue])
    if ("messages" in item)
      for (const message of item.messages) {
        entry.seen.set(message.id, message.at);
        // Held by the state on disk: a resumed turn may store them at once.
        entry.covered.add(message.id);
      }
  const channel = records.findLast((record) => record.role === "user")?.channel;
  if (channel && deps.channelNames.includes(channel)) entry.channel = channel;
  if (plan.queue.length === 0) {
    // Nothing to run; a `/queue` override is all that stays.
    const rest: PersistedSession | null =
      entry.override || unstored.length > 0
        ? {
            version: 1,
            turnSeq: state.turnSeq,
            runId: null,
            pending: null,
            queue: [],
            summaries: [],
            ...(entry.override ? { override: entry.override } : {}),
            ...(unstored.length > 0 ? { unstored } : {}),
          }
        : null;
    await writer.saveState(key, rest);
    entry.savedEmpty = rest === null;
    return true;
  }
  registry.actor(key, entry, { pending: null, queue: plan.queue, summaries: plan.summaries });
  return true;
}
