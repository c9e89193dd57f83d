import type { LaneWait } from "../../events.js";
import type { LaneGroupSpec } from "../lane-groups.js";
import type { ClusterDb } from "./cluster-db.js";
import type { ClusterEntry } from "./cluster-entry.js";

/** The fields every wait report of the entry carries, `now` on the lanes' clock. */
export function waitOf(entry: ClusterEntry, now: number) {
  return {
    lane: entry.lane,
    session: entry.session,
    entryId: entry.id,
    waitedMs: now - entry.enqueuedAt,
  };
}

/**
 * The `lane.waitExceeded` reports due for this process's tasks that waited `warnAfterMs` (checked at
 * each poll, so up to `pollMs` late), with where each stands in the database: its queue in the
 * cluster is the lane's rows, whichever process enqueued them. Each reported entry is marked warned.
 */
export async function longWaits(
  entries: Iterable<ClusterEntry>,
  db: ClusterDb,
  now: number,
  warnAfterMs: number,
  groupOf: ReadonlyMap<string, LaneGroupSpec> = new Map(),
): Promise<LaneWait[]> {
  const due = [...entries].filter(
    (e) => e.isWaiting && !e.warned && e.rowId !== undefined && now - e.enqueuedAt >= warnAfterMs,
  );
  if (due.length === 0) return [];
  const positions = await db.waitPositions(due.map((e) => e.rowId!));
  // The capacity groups of the lanes waited on, counted cluster-wide: one query per group.
  const groups = new Map<string, LaneWait["group"]>();
  for (const spec of new Set(due.flatMap((e) => groupOf.get(e.lane) ?? []))) {
    const activeNow = await db.activeIn(spec.lanes);
    if (activeNow >= spec.capacity)
      groups.set(spec.name, { name: spec.name, capacity: spec.capacity, activeNow });
  }
  const reports: LaneWait[] = [];
  for (const entry of due) {
    const at = positions.get(entry.rowId!);
    // Granted (or gone) meanwhile: it no longer waits.
    if (!at || !entry.isWaiting) continue;
    entry.warned = true;
    const group = at.sessionBusy ? undefined : groups.get(groupOf.get(entry.lane)?.name ?? "");
    reports.push({
      ...waitOf(entry, now),
      waitingFor: at.sessionBusy ? "session" : "slot",
      starting: false,
      queueAhead: at.queueAhead,
      activeAhead: at.sessionBusy ? 1 : at.activeNow,
      activeNow: at.activeNow,
      queueBehind: at.queueBehind,
      ...(group ? { group } : {}),
    });
  }
  return reports;
}

/** The report made again as a task that was reported waiting too long starts. */
export function startingWait(entry: ClusterEntry, now: number, activeNow: number): LaneWait {
  return {
    ...waitOf(entry, now),
    waitingFor: "slot",
    starting: true,
    queueAhead: 0,
    activeAhead: activeNow,
    activeNow,
    queueBehind: 0,
  };
}
