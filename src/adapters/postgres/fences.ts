/**
 * Where a store finds the fencing token of the run this process holds for a session. The cluster lanes
 * implement it: while a task of the session runs here, every write of that session carries the token of
 * its grant, and the store refuses the write once that token no longer holds the lease.
 */
export interface FenceSource {
  /** The token of the session's run in this process; undefined when none runs here. */
  fenceFor(session: string): number | undefined;
  /**
   * Told of each write made with a token: a run that ends by itself gives its grant back only once the
   * writes it issued while holding it have landed (else they would find the grant gone).
   */
  using?(session: string, write: Promise<unknown>): void;
  /**
   * The session's ownership token (the cluster sessions' `ownershipFence`): a state save made while
   * no run of the session holds a lane token here carries it, and is refused once another process
   * owns the session (a process paused past its lease cannot overwrite the new owner's state).
   */
  ownerFenceFor?(session: string): { owner: string; fence: number } | undefined;
}

/** No run holds anything: writes are not fenced (one process, or writes outside any run). */
export const NO_FENCES: FenceSource = { fenceFor: () => undefined };

/**
 * The fence check every fenced write runs inside its transaction, with the token as parameter `$n`:
 * true when no token is given, or the token is the session's active grant and its lease has not run
 * out. `FOR SHARE` holds the grant's row until the write commits, so a reaper cannot take the session
 * between the check and the write.
 */
export function fenceHolds(sessionParam: string, fenceParam: string): string {
  return `(${fenceParam}::bigint IS NULL OR EXISTS (SELECT 1 FROM lane_runs r
    WHERE r.session_key = ${sessionParam} AND r.state = 'active' AND r.fence = ${fenceParam}::bigint
      AND r.lease_until > clock_timestamp() FOR SHARE))`;
}

/**
 * The ownership check of a state save (parameters: the session, then the owner and its token, both
 * NULL when the save carries none): the session is still that process's under that token, with a lease
 * that has not run out.
 */
export function ownershipHolds(sessionParam: string, ownerParam: string, fenceParam: string): string {
  return `(${fenceParam}::bigint IS NULL OR EXISTS (SELECT 1 FROM session_owners o
    WHERE o.session_key = ${sessionParam} AND o.owner = ${ownerParam}::text AND o.fence = ${fenceParam}::bigint
      AND o.lease_until > clock_timestamp() FOR SHARE))`;
}
