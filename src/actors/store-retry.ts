import { errorMessage, isStoreUnreachable } from "../errors.js";
import { sleep } from "../ports/clock.js";
import type { ActorDeps } from "./deps.js";

/** The first wait after a write found the store unreachable, doubled per try up to the cap. */
export const FIRST_WAIT_MS = 200;
const MAX_WAIT_MS = 5_000;

/** The wait after `wait` for a store still unreachable: doubled, up to the cap. */
export const nextWait = (wait: number): number => Math.min(wait * 2, MAX_WAIT_MS);

/**
 * Runs a delivery-ledger write (an intent, a receipt, a final's record), and while it fails because the
 * store cannot be reached (a database restarting or failing over), holds it in memory and tries it
 * again with backoff on the gateway's clock until it lands or fails for another reason. The turn waits
 * meanwhile, so its session is neither resumed nor given up with the record unsaved: a reply whose
 * intent or receipt is lost is the one a resumed turn would answer again. `signal` ends the waiting
 * (the session left this process): the last error is thrown.
 */
export async function untilStored<T>(
  deps: ActorDeps,
  what: { session: string; op: string },
  write: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  let wait = FIRST_WAIT_MS;
  for (;;) {
    try {
      return await write();
    } catch (error) {
      if (!isStoreUnreachable(error) || signal?.aborted) throw error;
      deps.logger.warn({ ...what, error: errorMessage(error), retryInMs: wait }, "store.unreachable");
      try {
        await sleep(deps.clock, wait, signal);
      } catch {
        throw error;
      }
      wait = nextWait(wait);
    }
  }
}
