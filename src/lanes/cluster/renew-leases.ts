import type { Logger } from "../../logger.js";
import type { Clock } from "../../ports/clock.js";
import type { ClusterDb, Grant } from "./cluster-db.js";
import type { ClusterEntry } from "./cluster-entry.js";
import type { GrantedRuns } from "./granted-runs.js";

/** What one heartbeat reads and acts on: the lanes' entries and their database. */
export interface RenewLeasesContext {
  db: ClusterDb;
  clock: Clock;
  logger: Logger;
  processId: string;
  leaseMs: number;
  entries: Map<number, ClusterEntry>;
  /** Rows of runs that ended by themselves, on their way back. */
  returning: Set<string>;
  runs: GrantedRuns;
  /** A grant found by the heartbeat whose wake-up was missed; `sentAt`: when the query was sent. */
  granted(grant: Grant, sentAt: number): void;
}

/**
 * One heartbeat: renews the leases of the rows this process's tasks still hold or wait on, starts a
 * grant whose wake-up was missed, and gives up a lease not renewed in time. `judged`: this heartbeat's
 * generation (a run started in it or later is not judged by it).
 */
export async function renewLeases(context: RenewLeasesContext, judged: number): Promise<void> {
  const { db, clock, logger, processId, leaseMs, entries, returning, runs } = context;
  const sentAt = clock.now();
  try {
    // Only rows whose task still runs or waits here: an ended run's row is never renewed.
    const live = [...entries.values()]
      .filter(
        (e) => (e.state === "running" || e.isWaiting) && e.rowId !== undefined && !returning.has(e.rowId),
      )
      .map((e) => e.rowId!);
    const renewed = await db.heartbeat(live);
    const held = new Set(renewed.map((grant) => grant.id));
    // A grant whose wake-up was missed starts now; one nobody waits for is given back (a renewed
    // row that no task of this process holds would keep its session blocked).
    for (const grant of renewed) {
      if (entries.get(grant.localId)?.state !== "running") context.granted(grant, sentAt);
    }
    for (const entry of entries.values()) {
      if (entry.state !== "running") continue;
      if (held.has(entry.rowId!)) entry.leaseDeadline = sentAt + leaseMs;
      else if (entry.startedInGeneration < judged) runs.loseLease(entry);
    }
  } catch (error) {
    logger.warn({ err: error, processId }, "cluster lanes: heartbeat failed");
  }
  // Whatever the database said: a lease not renewed in time is given up here too.
  const now = clock.now();
  for (const entry of entries.values())
    if (entry.state === "running" && entry.leaseDeadline <= now) runs.loseLease(entry);
}
