import type { RunEnd } from "./cluster-db.js";

/**
 * Runs that ended here, by lane, waiting for the lane's next claim pass: the pass deletes their rows
 * in its own transaction, before it counts the active ones, so a freed slot is granted again in the
 * same round trip as its end.
 */
export class RunEnds {
  private readonly byLane = new Map<string, RunEnd[]>();

  constructor(
    private readonly deps: {
      /** The lane's ends may wait for its pass (false: a grouped lane, or the lanes are closing). */
      folds(lane: string): boolean;
      /** Runs (or asks for) the lane's next claim pass. */
      claim(lane: string): void;
      /** Gives one row back on its own, with backoff while the database cannot answer. */
      release(rowId: string, fence: number, lane: string): void;
    },
  ) {}

  /** A run ended cleanly and its writes landed: its row goes in its lane's next claim pass. */
  end(lane: string, rowId: string, fence: number): void {
    if (!this.deps.folds(lane)) {
      this.deps.release(rowId, fence, lane);
      return;
    }
    this.byLane.set(lane, [...(this.byLane.get(lane) ?? []), { rowId, fence }]);
    this.deps.claim(lane);
  }

  /**
   * Runs `pass` with the lane's waiting ends; answers what it answered and the ends it committed. A
   * pass that fails gives each end back on its own; one refused (undefined: rolled back) keeps them
   * for the next pass.
   */
  async pass<T>(
    lane: string,
    pass: (ends: readonly RunEnd[]) => Promise<T | undefined>,
  ): Promise<{ result: T | undefined; ended: readonly RunEnd[] }> {
    const ends = this.byLane.get(lane) ?? [];
    this.byLane.delete(lane);
    let result: T | undefined;
    try {
      result = await pass(ends);
    } catch (error) {
      for (const end of ends) this.deps.release(end.rowId, end.fence, lane);
      throw error;
    }
    if (result !== undefined) return { result, ended: ends };
    if (ends.length > 0) this.byLane.set(lane, [...ends, ...(this.byLane.get(lane) ?? [])]);
    return { result, ended: [] };
  }
}
