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
 * The saves of a batch as common table expressions, from parameter `$first` on (five arrays): each row
 * is written, or deleted, only when its own tokens hold; `s_c` answers whether each did, by its place
 * in the batch (`ord`, 1-based).
 */
export function saveCtes(first: number): string {
  const p = (n: number) => `$${first + n}`;
  return `s_v AS (
  SELECT * FROM unnest(${p(0)}::text[], ${p(1)}::bigint[], ${p(2)}::text[], ${p(3)}::bigint[], ${p(4)}::text[])
    WITH ORDINALITY AS v(session_key, fence, owner, owner_fence, state, ord)),
s_c AS (
  SELECT v.ord, v.session_key, v.state,
         ${fenceHolds("v.session_key", "v.fence")} AND ${ownershipHolds("v.session_key", "v.owner", "v.owner_fence")} AS ok
    FROM s_v v),
s_u AS (
  INSERT INTO session_state (session_key, state)
  SELECT session_key, state FROM s_c WHERE ok AND state IS NOT NULL ORDER BY session_key
  ON CONFLICT (session_key) DO UPDATE SET state = excluded.state, updated_at = now()),
s_d AS (DELETE FROM session_state s USING s_c c WHERE c.ok AND c.state IS NULL AND s.session_key = c.session_key)`;
}

/** Every save of the batch in one statement (one round trip, one commit). */
export const SAVE_STATES = `WITH ${saveCtes(1)}
SELECT ord, ok FROM s_c`;

/** The parameters of {@link saveCtes}, in its order. */
export function saveValues(batch: readonly StateSave[]): unknown[] {
  return [
    batch.map((s) => s.session),
    batch.map((s) => s.fence),
    batch.map((s) => s.owner?.owner ?? null),
    batch.map((s) => s.owner?.fence ?? null),
    batch.map((s) => s.json),
  ];
}
