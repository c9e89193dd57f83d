import type pg from "pg";
import { fenceHolds, ownershipHolds } from "./fences.js";
import { GroupCommit } from "./group-commit.js";

/** One session's state save: the JSON (null deletes it) and the tokens that must still hold. */
export interface StateSave {
  session: string;
  /** The run's lane token, or null. */
  fence: number | null;
  /** The session's ownership (when no run fences the save), or undefined. */
  owner: { owner: string; fence: number } | undefined;
  json: string | null;
}

/**
 * Every save of the batch in one statement (one round trip, one commit): each row is written, or
 * deleted, only when its own tokens hold; answers whether each did, by its place in the batch.
 */
const SAVE_STATES = `
WITH v AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[])
    WITH ORDINALITY AS v(session_key, fence, owner, owner_fence, state, ord)),
c AS (
  SELECT v.ord, v.session_key, v.state,
         ${fenceHolds("v.session_key", "v.fence")} AND ${ownershipHolds("v.session_key", "v.owner", "v.owner_fence")} AS ok
    FROM v),
u AS (
  INSERT INTO session_state (session_key, state)
  SELECT session_key, state FROM c WHERE ok AND state IS NOT NULL ORDER BY session_key
  ON CONFLICT (session_key) DO UPDATE SET state = excluded.state, updated_at = now()),
d AS (DELETE FROM session_state s USING c WHERE c.ok AND c.state IS NULL AND s.session_key = c.session_key)
SELECT ord, ok FROM c`;

/**
 * Group commit of session state saves (see {@link GroupCommit}). When a batch fails, one save's row
 * may be what failed: each save is tried once more alone, so it fails alone (and its caller retries).
 */
export class StateSaves {
  private readonly batches = new GroupCommit<StateSave>(
    (batch) => this.run(batch),
    () => true,
  );

  constructor(private readonly pool: pg.Pool) {}

  /** True when the save went through; false when its tokens no longer hold (nothing written). */
  save(item: StateSave): Promise<boolean> {
    return this.batches.submit(item);
  }

  /** Runs one batch: whether each save went through, in the batch's order. */
  private async run(batch: readonly StateSave[]): Promise<boolean[]> {
    const { rows } = await this.pool.query<{ ord: string; ok: boolean }>({
      name: "tiller.saveStates",
      text: SAVE_STATES,
      values: [
        batch.map((s) => s.session),
        batch.map((s) => s.fence),
        batch.map((s) => s.owner?.owner ?? null),
        batch.map((s) => s.owner?.fence ?? null),
        batch.map((s) => s.json),
      ],
    });
    const ok = new Map(rows.map((row) => [Number(row.ord), row.ok]));
    return batch.map((_, index) => ok.get(index + 1) === true);
  }
}
