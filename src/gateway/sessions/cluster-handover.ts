// A session changing hands between the processes of a cluster: this process adopts one another ran,
// or settles one before giving it up (its state stored first).
import type { TranscriptWriter } from "../../adapters/transcript-writer.js";
import type { EmitEvent } from "../../events.js";
import type { SubagentNumbers } from "../subagents/subagent-numbers.js";
import { type ResumeDeps, resumeSession } from "./resume-sessions.js";
import type { SessionPersistence } from "./session-persistence.js";
import type { SessionRegistry } from "./session-registry.js";

/** What a handover touches: the live sessions, their writer and saved state, the subagent numbers. */
export interface HandoverDeps {
  registry: SessionRegistry;
  writer: TranscriptWriter;
  persistence: SessionPersistence;
  subagentNumbers: SubagentNumbers;
  resumeDeps: ResumeDeps;
  emit: EmitEvent;
  /** Nothing runs or waits for the session in this process. */
  isIdle(session: string): boolean;
}

/** Takes over a session another process may have run since this one did: the store is the truth. */
export async function adoptSession(deps: HandoverDeps, session: string): Promise<void> {
  const { registry, writer, subagentNumbers, resumeDeps, emit, isIdle } = deps;
  const entry = registry.get(session);
  if (entry?.actor && !isIdle(session)) return;
  // Another process may have run the session since this one last did: the store is the truth
  // (for its subagents' keys too).
  subagentNumbers.forget(session);
  registry.stop(session);
  writer.forget(session);
  if (entry) {
    entry.known = undefined;
    entry.override = null;
    entry.savedFrom = null;
    entry.savedEmpty = true;
    entry.savedAs = undefined;
    entry.lastQueue = [];
    entry.lastSummaries = [];
  }
  const resumed = await resumeSession(resumeDeps, session);
  emit("session.adopted", { session, resumed });
}

/** Stores a session's live state before it is given up; throws when it still cannot be stored. */
export async function settleSession(deps: HandoverDeps, session: string): Promise<void> {
  const { registry, persistence } = deps;
  const entry = registry.get(session);
  if (!entry) return;
  persistence.flush(session, entry);
  await entry.saving;
  if (!entry.notDurable?.size) return;
  // The last save failed (the store was away): save the live state again, and say so if it
  // still cannot be stored (the inbox then keeps the rows and tries again later).
  entry.savedFrom = null;
  entry.savedEmpty = false;
  entry.savedAs = undefined;
  persistence.persist(session, entry, entry.actor?.getSnapshot());
  persistence.flush(session, entry);
  await entry.saving;
  if (entry.notDurable?.size) throw new Error(`session ${session}: its state could not be stored yet`);
}
