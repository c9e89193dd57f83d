import type { Gateway, SessionInspection } from "../gateway/create-gateway.js";
import type { PersistedSession } from "../policy/plan-resume.js";
import type { SessionPlacement } from "../ports/session-cluster.js";

/**
 * A session as the HTTP API reports it: `inspectSession()`, and on a gateway of several processes the
 * process that owns it (`null`: nobody does).
 */
export type SessionView = SessionInspection & { owner?: string | null };

/**
 * What this process can truthfully say about each of `keys` (`undefined`: a session it never saw, which
 * the caller looks up in the store). Alone, that is `inspectSession()`. With several processes, a
 * session whose turn runs or waits on another process is reported from the database, not as the idle
 * session this process holds no live state for: its state from its lane run (`turn.running`, or
 * `turn.waitingForLane`), the run with the id the owner stored and the process that runs it, and the
 * queue as the owner last stored it.
 */
export async function viewSessions(
  gateway: Gateway,
  keys: readonly string[],
  /** The transcript length of a session not loaded here (reading a whole transcript is not free). */
  lengthOf: (key: string) => Promise<number>,
): Promise<Map<string, SessionView>> {
  const cluster = gateway.cluster;
  const out = new Map<string, SessionView>();
  if (!cluster) {
    for (const key of keys) {
      const inspection = gateway.inspectSession(key);
      if (inspection) out.set(key, inspection);
    }
    return out;
  }
  const placements: Map<string, SessionPlacement> = cluster.placements
    ? await cluster.placements(keys)
    : new Map(
        [...(await cluster.owners(keys))].map(([key, owner]) => [
          key,
          { owner, runningOn: null, queued: 0, capacity: null },
        ]),
      );
  for (const key of keys) {
    const inspection = gateway.inspectSession(key);
    const placement = placements.get(key);
    const owner = placement?.owner ?? null;
    const elsewhere =
      placement !== undefined &&
      !inspection?.run &&
      (placement.runningOn
        ? placement.runningOn.process !== cluster.processId
        : placement.queued > 0 && owner !== null && owner !== cluster.processId);
    if (elsewhere) out.set(key, await remoteView(gateway, key, placement, inspection, lengthOf));
    else if (inspection) out.set(key, { ...inspection, owner });
    else if (owner !== null) out.set(key, { ...idle(await lengthOf(key)), owner });
  }
  return out;
}

/** A session with no live state here: idle, as far as this process knows. */
export function idle(transcriptLength: number): SessionInspection {
  return { state: "idle", run: null, queue: [], lane: null, transcriptLength };
}

/** A session whose turn runs or waits on another process, from the database and its stored state. */
async function remoteView(
  gateway: Gateway,
  key: string,
  placement: SessionPlacement,
  inspection: SessionInspection | undefined,
  lengthOf: (key: string) => Promise<number>,
): Promise<SessionView> {
  const stored = (await gateway.store.loadState(key)) as Partial<PersistedSession> | null;
  const running = placement.runningOn;
  return {
    state: running ? "turn.running" : "turn.waitingForLane",
    // Its machine state and re-check passes live on the process that runs it (`process`).
    run:
      running && typeof stored?.runId === "string"
        ? { runId: stored.runId, state: "running", passes: 0, process: running.process, lane: running.lane }
        : null,
    queue: (stored?.queue ?? []).map((item) => ({
      kind: item.kind,
      messageIds: item.kind === "recovery" ? [] : item.messages.map((message) => message.id),
    })),
    lane: {
      active: running ? 1 : 0,
      queued: placement.queued,
      capacity: placement.capacity ?? inspection?.lane?.capacity ?? 0,
    },
    transcriptLength: inspection?.transcriptLength || (await lengthOf(key)),
    owner: placement.owner,
  };
}
