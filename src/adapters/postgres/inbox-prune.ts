import type { Clock } from "../../ports/clock.js";

/**
 * When the poll of the cluster sessions also prunes applied inbox rows: at its first run, then once a
 * tenth of the dedupe window has passed (a minute at most). An id may run again a little after the
 * window rather than exactly at its end, and each process stops scanning the inbox twice a second for
 * rows that only go once a window.
 */
export function inboxPruneDue(clock: Clock, dedupeWindowMs: number): () => boolean {
  const everyMs = Math.min(dedupeWindowMs / 10, 60_000);
  let last = Number.NEGATIVE_INFINITY;
  return () => {
    const now = clock.now();
    if (now - last < everyMs) return false;
    last = now;
    return true;
  };
}
