import type pg from "pg";
import type { DeliveryClaim, DeliveryClaims, DeliveryOutcome } from "../../ports/delivery-claims.js";
import type { Named } from "./connection.js";
import { GroupCommit } from "./group-commit.js";

// One statement for a batch of claims (sessions and delivery ids by place): each claim is taken when
// nobody holds it, when this process does already (its own second send, the one resend of a failed
// one), when its send failed, or when its holder stopped renewing it; else the row as it is says why
// not. The row lock of ON CONFLICT makes it a compare-and-set: of processes claiming at once, exactly
// one gets it. Rows are written in key order (two processes' batches lock in one order). Named, as
// RENEW and SETTLE_ALL: their plans kept per connection.
const CLAIM_ALL: Named = {
  name: "tiller.claimSends",
  text: `WITH v AS (
  SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS v(session_key, delivery_id, ord)),
taken AS (
  INSERT INTO delivery_claims AS c (session_key, delivery_id, owner, state, lease_until)
  SELECT session_key, delivery_id, $3, 'sending', clock_timestamp() + $4 * interval '1 millisecond'
    FROM v ORDER BY session_key, delivery_id
  ON CONFLICT (session_key, delivery_id) DO UPDATE
    SET owner = excluded.owner, state = 'sending', message_id = NULL, settled_at = NULL,
        lease_until = excluded.lease_until
    WHERE c.state = 'failed'
       OR (c.state = 'sending' AND (c.owner = excluded.owner OR c.lease_until <= clock_timestamp()))
  RETURNING c.session_key, c.delivery_id)
SELECT v.ord, t.session_key IS NOT NULL AS taken, c.state, c.message_id,
       greatest(0, ceil(extract(epoch FROM c.lease_until - clock_timestamp()) * 1000))::int AS left_ms
  FROM v LEFT JOIN taken t ON t.session_key = v.session_key AND t.delivery_id = v.delivery_id
  LEFT JOIN delivery_claims c ON c.session_key = v.session_key AND c.delivery_id = v.delivery_id`,
};

const RENEW: Named = {
  name: "tiller.renewSend",
  text: `UPDATE delivery_claims SET lease_until = clock_timestamp() + $4 * interval '1 millisecond'
 WHERE session_key = $1 AND delivery_id = $2 AND owner = $3 AND state = 'sending' RETURNING 1`,
};

// A batch of settles (by place), each only of a claim this process still holds.
const SETTLE_ALL: Named = {
  name: "tiller.settleSends",
  text: `UPDATE delivery_claims c SET state = v.state, message_id = v.message_id, settled_at = clock_timestamp()
  FROM unnest($1::text[], $2::text[], $4::text[], $5::text[]) AS v(session_key, delivery_id, state, message_id)
 WHERE c.session_key = v.session_key AND c.delivery_id = v.delivery_id AND c.owner = $3
   AND c.state = 'sending'`,
};

// Ended claims are kept for a week: far longer than any send stays open (a resend comes at a
// takeover or restart, a lease or so after the send).
const PRUNE = `DELETE FROM delivery_claims WHERE settled_at < clock_timestamp() - interval '7 days'`;
const PRUNE_EVERY = 1000;

interface ClaimRow {
  ord: string;
  taken: boolean;
  state: string | null;
  message_id: string | null;
  left_ms: number | null;
}

interface Claiming {
  session: string;
  deliveryId: string;
}
interface Settling extends Claiming {
  outcome: DeliveryOutcome;
}

/**
 * The claims of sends on the `delivery_claims` table (see {@link DeliveryClaims}), for process
 * `owner`. A claim that meets a row in an odd state (inserted by another process after this statement's
 * snapshot) answers `held` with no wait: the caller asks again. Claims, and settles, of different
 * sends made while a batch is in flight go to the database together (group commit); both are
 * idempotent for their owner, so a failed batch is always tried again send by send.
 */
export class PostgresDeliveryClaims implements DeliveryClaims {
  private settles = 0;
  private readonly claims = new GroupCommit<Claiming, DeliveryClaim>(
    (batch) => this.claimAll(batch),
    () => true,
  );
  private readonly settled = new GroupCommit<Settling, boolean>(
    (batch) => this.settleAll(batch),
    () => true,
  );

  constructor(
    private readonly pool: pg.Pool,
    private readonly owner: string,
    readonly leaseMs: number,
  ) {}

  claim(session: string, deliveryId: string): Promise<DeliveryClaim> {
    return this.claims.submit({ session, deliveryId });
  }

  async renew(session: string, deliveryId: string): Promise<boolean> {
    const { rows } = await this.pool.query({
      ...RENEW,
      values: [session, deliveryId, this.owner, this.leaseMs],
    });
    return rows.length > 0;
  }

  async settle(session: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void> {
    await this.settled.submit({ session, deliveryId, outcome });
    if (++this.settles % PRUNE_EVERY === 0) await this.pool.query(PRUNE).catch(() => undefined);
  }

  private async claimAll(batch: readonly Claiming[]): Promise<DeliveryClaim[]> {
    const { rows } = await this.pool.query<ClaimRow>({
      ...CLAIM_ALL,
      values: [batch.map((c) => c.session), batch.map((c) => c.deliveryId), this.owner, this.leaseMs],
    });
    const byPlace = new Map(rows.map((row) => [Number(row.ord) - 1, row]));
    return batch.map((_, index) => claimOf(byPlace.get(index)));
  }

  private async settleAll(batch: readonly Settling[]): Promise<boolean[]> {
    await this.pool.query({
      ...SETTLE_ALL,
      values: [
        batch.map((s) => s.session),
        batch.map((s) => s.deliveryId),
        this.owner,
        batch.map((s) => s.outcome.kind),
        batch.map((s) => (s.outcome.kind === "sent" ? s.outcome.messageId : null)),
      ],
    });
    return batch.map(() => true);
  }
}

function claimOf(row: ClaimRow | undefined): DeliveryClaim {
  if (row?.taken) return { kind: "claimed" };
  if (row?.state === "sent" && row.message_id) return { kind: "sent", messageId: row.message_id };
  if (row?.state === "unknown") return { kind: "unknown" };
  return { kind: "held", retryInMs: row?.left_ms ?? 0 };
}
