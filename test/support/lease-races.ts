import type { TestSchema } from "./postgres.js";

// Races between a session's stale owner and the process that takes it over, set up by hand: the first
// process renews nothing by itself (its heartbeat is starved) and loses its lease when the test says;
// the second polls quickly for sessions left without a live owner.

/** Cluster timing of the process whose lease the test ends. */
export const STARVED = { leaseMs: 60_000, heartbeatMs: 600_000, pollMs: 600_000, ackWaitMs: 1000 };
/** Cluster timing of the process that takes the session over. */
export const TAKER = { leaseMs: 2000, heartbeatMs: 500, pollMs: 100, ackWaitMs: 1000 };

/** Ends the current owner's ownership of `session` now, as a lease not renewed in time would. */
export async function leaseRunsOut(db: TestSchema, session: string): Promise<void> {
  await db.pool.query(
    `UPDATE ${db.schema}.session_owners SET lease_until = clock_timestamp() WHERE session_key = $1`,
    [session],
  );
}
