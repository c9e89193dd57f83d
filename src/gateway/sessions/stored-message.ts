import type { PersistedSession } from "../../policy/plan-resume.js";
import type { TranscriptStore } from "../../ports/store.js";
import { stateIds } from "./session-persistence.js";

/**
 * Whether the store holds message `id` of `session`: in its saved state (accepted, not yet stored in
 * the transcript) or in its transcript. The state is read first: a turn stores its messages in the
 * transcript before its state lets go of them, so a message moving between the two is never missed.
 *
 * @example
 * ```ts
 * await isMessageStored(store, "t:1", "schedule:digest:60000"); // true once its trigger was acked
 * ```
 */
export async function isMessageStored(store: TranscriptStore, session: string, id: string): Promise<boolean> {
  const state = (await store.loadState(session)) as PersistedSession | null;
  if (state && stateIds(state).includes(id)) return true;
  const records = await store.read(session);
  return records.some((record) => record.role === "user" && record.messageId === id);
}
