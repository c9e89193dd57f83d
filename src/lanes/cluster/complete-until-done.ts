import type { Logger } from "../../logger.js";
import { type Clock, sleep } from "../../ports/clock.js";
import type { ClusterDb } from "./cluster-db.js";

/**
 * Gives a run's row back, trying again with backoff while the database cannot answer (the row is no
 * longer renewed meanwhile, so at worst the reaper of any process drops it once its lease ran out).
 * Resolves with the lane the row freed; rejects only once the lanes are closed.
 */
export async function completeUntilDone(
  context: { db: ClusterDb; clock: Clock; logger: Logger; processId: string; isClosed: () => boolean },
  rowId: string,
  fence: number,
): Promise<string | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await context.db.complete(rowId, fence);
    } catch (error) {
      if (context.isClosed()) throw error;
      if (attempt === 0)
        context.logger.warn(
          { err: error, processId: context.processId, rowId },
          "cluster lanes: returning a run failed, trying again",
        );
      await sleep(context.clock, Math.min(100 * 2 ** attempt, 2000));
    }
  }
}
