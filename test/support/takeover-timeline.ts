import type { TestSchema } from "./postgres.js";

/**
 * Samples a cluster's session owners, lane rows and inbox while a takeover runs, and tells what
 * happened to each session when, in ms since `since`: where the time of a slow takeover went.
 */
export function takeoverTimeline(db: Pick<TestSchema, "pool" | "schema">, since: number, prefix: string) {
  const events: Array<{ at: number; session: string; what: string }> = [];
  const last = new Map<string, string>();
  const note = (session: string, kind: string, what: string) => {
    const key = `${session} ${kind}`;
    if (last.get(key) === what) return;
    last.set(key, what);
    events.push({ at: Date.now() - since, session, what: `${kind} ${what}` });
  };
  let running = true;
  const sample = async () => {
    const s = db.schema;
    const [owners, runs, inbox, claims] = await Promise.all([
      db.pool.query<{ session_key: string; owner: string; live: boolean }>(
        `SELECT session_key, owner, lease_until > now() AS live FROM ${s}.session_owners WHERE session_key LIKE $1`,
        [`${prefix}%`],
      ),
      db.pool.query<{ session_key: string; rows: string }>(
        `SELECT session_key, string_agg(state || '/p' || priority || '@' || owner, ' ' ORDER BY id) AS rows
           FROM ${s}.lane_runs WHERE session_key LIKE $1 GROUP BY session_key`,
        [`${prefix}%`],
      ),
      db.pool.query<{ session_key: string; waiting: string }>(
        `SELECT session_key, count(*)::text AS waiting FROM ${s}.inbox
          WHERE taken_at IS NULL AND session_key LIKE $1 GROUP BY session_key`,
        [`${prefix}%`],
      ),
      db.pool.query<{ session_key: string; open: string }>(
        `SELECT session_key, count(*)::text AS open FROM ${s}.delivery_claims
          WHERE state = 'sending' AND session_key LIKE $1 GROUP BY session_key`,
        [`${prefix}%`],
      ),
    ]);
    const sessions = new Set<string>();
    for (const r of owners.rows) {
      sessions.add(r.session_key);
      note(r.session_key, "owner", `${r.owner}${r.live ? "" : " (lapsed)"}`);
    }
    const byRuns = new Map(runs.rows.map((r) => [r.session_key, r.rows]));
    const byInbox = new Map(inbox.rows.map((r) => [r.session_key, r.waiting]));
    const byClaims = new Map(claims.rows.map((r) => [r.session_key, r.open]));
    for (const session of new Set([...sessions, ...byRuns.keys(), ...byInbox.keys()])) {
      note(session, "lane", byRuns.get(session) ?? "-");
      note(session, "inbox waiting", byInbox.get(session) ?? "0");
      note(session, "claims sending", byClaims.get(session) ?? "0");
    }
  };
  const loop = (async () => {
    while (running) {
      await sample().catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  })();
  return {
    async stop(): Promise<string> {
      running = false;
      await loop;
      const { rows } = await db.pool.query<{
        session_key: string;
        kind: string;
        text: string;
        at_ms: number;
      }>(`SELECT session_key, kind, text, at_ms FROM ${db.schema}.web_deliveries WHERE session_key LIKE $1`, [
        `${prefix}%`,
      ]);
      for (const r of rows)
        events.push({
          at: Math.round(r.at_ms - since),
          session: r.session_key,
          what: `delivered ${r.kind} ${r.text}`,
        });
      events.sort((a, b) => a.session.localeCompare(b.session) || a.at - b.at);
      return events.map((e) => `${String(e.at).padStart(7)} ${e.session} ${e.what}`).join("\n");
    },
  };
}
