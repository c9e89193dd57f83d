import type pg from "pg";
import { fenceHolds, ownershipHolds } from "./fences.js";

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

/** Batches at most this many statements in flight; saves arriving meanwhile form the next batch. */
const IN_FLIGHT = 2;

interface Waiting extends StateSave {
  resolve(ok: boolean): void;
  reject(error: unknown): void;
}

/**
 * Group commit of session state saves: the saves of different sessions that arrive while earlier
 * batches are in flight go to the database together, in one statement, so a busy process pays one
 * commit (one wait for the disk) for many of them. A save resolves only once its batch has committed;
 * when a batch fails, each of its saves is tried once more alone (so one bad row fails only its own
 * save; a failure there rejects it, and its caller retries). A session has at most one
 * save waiting here (the store runs a session's writes one after another).
 */
export class StateSaves {
  private waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly pool: pg.Pool) {}

  /** True when the save went through; false when its tokens no longer hold (nothing written). */
  save(item: StateSave): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...item, resolve, reject });
      if (this.waiting.length === 1) queueMicrotask(() => this.next());
    });
  }

  private alone(save: Waiting): void {
    this.run([save]).then(
      (ok) => save.resolve(ok[0]!),
      (error: unknown) => save.reject(error),
    );
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

  private next(): void {
    if (this.inFlight >= IN_FLIGHT || this.waiting.length === 0) return;
    // Rows in key order: two processes' batches lock shared rows in the same order.
    const batch = this.waiting.splice(0).sort((a, b) => (a.session < b.session ? -1 : 1));
    this.inFlight++;
    this.run(batch)
      .then(
        (ok) => {
          for (const [index, save] of batch.entries()) save.resolve(ok[index]!);
        },
        (error: unknown) => {
          // One save's row may be what failed: each is tried once more on its own, so it fails alone.
          if (batch.length === 1) batch[0]!.reject(error);
          else for (const save of batch) this.alone(save);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.next();
      });
  }
}
