import type pg from "pg";
import type { DeliveryClaim, DeliveryClaims, DeliveryOutcome } from "../../ports/delivery-claims.js";
import type { Named } from "./connection.js";

// One statement: the claim is taken when nobody holds it, when this process does already (its own
// second send, the one resend of a failed one), when its send failed, or when its holder stopped
// renewing it; else the row as it is says why not. The row lock of ON CONFLICT makes it a
// compare-and-set: of processes claiming at once, exactly one gets it. Named, as RENEW and SETTLE: one
// claim and one settle per send, their plans kept per connection.
const CLAIM: Named = {
  name: "tiller.claimSend",
  text: `WITH taken AS (
  INSERT INTO delivery_claims AS c (session_key, delivery_id, owner, state, lease_until)
  VALUES ($1, $2, $3, 'sending', clock_timestamp() + $4 * interval '1 millisecond')
  ON CONFLICT (session_key, delivery_id) DO UPDATE
    SET owner = excluded.owner, state = 'sending', message_id = NULL, settled_at = NULL,
        lease_until = excluded.lease_until
    WHERE c.state = 'failed'
       OR (c.state = 'sending' AND (c.owner = excluded.owner OR c.lease_until <= clock_timestamp()))
  RETURNING 1)
SELECT EXISTS (SELECT 1 FROM taken) AS taken, c.state, c.message_id,
       greatest(0, ceil(extract(epoch FROM c.lease_until - clock_timestamp()) * 1000))::int AS left_ms
  FROM (SELECT 1) one LEFT JOIN delivery_claims c ON c.session_key = $1 AND c.delivery_id = $2`,
};

const RENEW: Named = {
  name: "tiller.renewSend",
  text: `UPDATE delivery_claims SET lease_until = clock_timestamp() + $4 * interval '1 millisecond'
 WHERE session_key = $1 AND delivery_id = $2 AND owner = $3 AND state = 'sending' RETURNING 1`,
};

const SETTLE: Named = {
  name: "tiller.settleSend",
  text: `UPDATE delivery_claims SET state = $4, message_id = $5, settled_at = clock_timestamp()
 WHERE session_key = $1 AND delivery_id = $2 AND owner = $3 AND state = 'sending'`,
};

// Ended claims are kept for a week: far longer than any send stays open (a resend comes at a
// takeover or restart, a lease or so after the send).
const PRUNE = `DELETE FROM delivery_claims WHERE settled_at < clock_timestamp() - interval '7 days'`;
const PRUNE_EVERY = 1000;

interface ClaimRow {
  taken: boolean;
  state: string | null;
  message_id: string | null;
  left_ms: number | null;
}

/**
 * The claims of sends on the `delivery_claims` table (see {@link DeliveryClaims}), for process
 * `owner`. A claim that meets a row in an odd state (inserted by another process after this statement's
 * snapshot) answers `held` with no wait: the caller asks again.
 */
export class PostgresDeliveryClaims implements DeliveryClaims {
  private settles = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly owner: string,
    readonly leaseMs: number,
  ) {}

  async claim(session: string, deliveryId: string): Promise<DeliveryClaim> {
    const values = [session, deliveryId, this.owner, this.leaseMs];
    const { rows } = await this.pool.query<ClaimRow>({ ...CLAIM, values });
    const row = rows[0]!;
    if (row.taken) return { kind: "claimed" };
    if (row.state === "sent" && row.message_id) return { kind: "sent", messageId: row.message_id };
    if (row.state === "unknown") return { kind: "unknown" };
    return { kind: "held", retryInMs: row.left_ms ?? 0 };
  }

  async renew(session: string, deliveryId: string): Promise<boolean> {
    const { rows } = await this.pool.query({
      ...RENEW,
      values: [session, deliveryId, this.owner, this.leaseMs],
    });
    return rows.length > 0;
  }

  async settle(session: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
    await this.pool.query({
      ...SETTLE,
      values: [
        session,
        deliveryId,
        this.owner,
        outcome.kind,
        outcome.kind === "sent" ? outcome.messageId : null,
      ],
    });
    if (++this.settles % PRUNE_EVERY === 0) await this.pool.query(PRUNE).catch(() => undefined);
  }
}
