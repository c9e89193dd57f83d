import { describe } from "../../errors.js";
import type { LaneSnapshot } from "../lane-scheduler.types.js";
import { SESSION_PREFIX } from "../run-options.js";
import type { ClusterDb } from "./cluster-db.js";
import type { ClusterEntry } from "./cluster-entry.js";

/**
 * The lanes' snapshot: the workload lanes as the last poll counted them in the database, and this
 * process's session lanes from its own entries.
 */
export function clusterSnapshot(
  counts: LaneSnapshot["lanes"],
  entries: Iterable<ClusterEntry>,
): LaneSnapshot {
  const lanes: LaneSnapshot["lanes"] = structuredClone(counts);
  for (const entry of entries) {
    if (entry.session === undefined || !(entry.isWaiting || entry.state === "running")) continue;
    const key = `${SESSION_PREFIX}${entry.session}`;
    const lane = lanes[key] ?? { active: 0, queued: 0, capacity: 1 };
    lanes[key] = lane;
    if (entry.state === "running") lane.active++;
    else lane.queued++;
  }
  return { lanes };
}

/** The workload lanes' counts as the database has them; a lane with no stored capacity uses its own. */
export async function laneCounts(
  db: ClusterDb,
  capacities: ReadonlyMap<string, number>,
): Promise<LaneSnapshot["lanes"]> {
  const counts: LaneSnapshot["lanes"] = {};
  for (const row of await db.laneCounts()) {
    const capacity = row.capacity >= 0 ? row.capacity : (capacities.get(row.lane) ?? 1);
    counts[row.lane] = { active: row.active, queued: row.queued, capacity };
  }
  return counts;
}

/**
 * This process's waiting tasks whose rows are gone. While the database was away this process could
 * not renew its membership, and once it is back another process's reaper (or its own, before its
 * first renewal) drops its waiting rows as those of a dead process: without enqueuing them again the
 * tasks would wait here for good, their sessions blocked.
 */
export async function lostWaiting(entries: Iterable<ClusterEntry>, db: ClusterDb): Promise<ClusterEntry[]> {
  const waiting = [...entries].filter((e) => e.isWaiting && e.rowId !== undefined);
  if (waiting.length === 0) return [];
  const present = await db.existing(waiting.map((e) => e.rowId!));
  return waiting.filter((e) => e.isWaiting && e.rowId !== undefined && !present.has(e.rowId));
}

/** How many of these tasks wait for a slot. */
export function waitingCount(entries: Iterable<ClusterEntry>): number {
  let waiting = 0;
  for (const entry of entries) if (entry.isWaiting) waiting++;
  return waiting;
}

/** The lanes with tasks whose rows wait in the database. */
export function lanesWaiting(entries: Iterable<ClusterEntry>): Set<string> {
  const lanes = new Set<string>();
  for (const entry of entries) if (entry.isWaiting && entry.rowId) lanes.add(entry.lane);
  return lanes;
}

/** The waiting tasks `clear(laneName)` rejects: of a workload lane, or of a session (`session:<key>`). */
export function toClear(entries: Iterable<ClusterEntry>, laneName: string): ClusterEntry[] {
  if (typeof laneName !== "string")
    throw new TypeError(`lane: expected a string, received ${describe(laneName)}`);
  const session = laneName.startsWith(SESSION_PREFIX) ? laneName.slice(SESSION_PREFIX.length) : undefined;
  return [...entries].filter(
    (e) => e.isWaiting && (session === undefined ? e.lane === laneName : e.session === session),
  );
}
