import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebChannel } from "../../../src/adapters/channels/web-channel.js";
import { FileDeliveryLog } from "../../../src/adapters/jsonl/file-delivery-log.js";
import { PostgresDeliveryLog } from "../../../src/adapters/postgres/postgres-delivery-log.js";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import type { TillerEvent } from "../../../src/events.js";
import { type Channel, withSend } from "../../../src/ports/channel.js";
import { MemoryDeliveryLog } from "../../../src/ports/delivery-log.js";
import type { ModelProvider } from "../../../src/ports/model.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { deferred } from "../../support/deferred.js";
import { leaseRunsOut, STARVED, TAKER } from "../../support/lease-races.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually } from "../../support/serve-cluster.js";

// The web channel of `tiller serve --postgres` stores its deliveries in the cluster's one delivery
// log, a deliveryId once per session whichever process stores it: its sends are made without a claim
// (two statements fewer), and a reply two processes both send is still shown once. The races are the
// claims' (cluster-send-claims.test.ts), set up by hand: a send or a model call held, the lease ended
// by SQL.

const db = usePostgresSchema("websends");
const clusteredGateway = useClusteredGateways(db);
const REPLY = { reply: { text: "Answer to: {{latestUser}}" } };

const logs: PostgresDeliveryLog[] = [];
afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
});

/** One process's web channel on the shared log; `hold` wraps its sends (a send held in flight). */
async function webOnSharedLog(hold?: (web: Channel) => Channel): Promise<Channel> {
  const log = await PostgresDeliveryLog.connect({ url: db.url, schema: db.schema, pollMs: 60_000 });
  logs.push(log);
  const web = new WebChannel(log);
  return hold ? hold(web) : web;
}

/** Sends that wait for `open` before they reach the channel, capabilities kept. */
function held(open: Promise<void>, started: () => void) {
  return (web: Channel): Channel =>
    withSend(web, async (message, options) => {
      started();
      await open;
      return web.send(message, options);
    });
}

async function stored(session: string, text: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ message_id: string }>(
    `SELECT message_id FROM ${db.schema}.web_deliveries WHERE session_key = $1 AND text = $2`,
    [session, text],
  );
  return rows.map((row) => row.message_id);
}

async function claims(session: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${db.schema}.delivery_claims WHERE session_key = $1`,
    [session],
  );
  return Number(rows[0]?.n);
}

function recorded(gateway: { subscribe(listener: (event: TillerEvent) => void): () => void }) {
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  return events;
}

const deliveredId = (events: TillerEvent[], session: string) =>
  events.find((e) => e.type === "final.delivered" && e.session === session) as
    | { messageId?: string }
    | undefined;

describe("the web channel on the shared delivery log", () => {
  it("declares that it stores a deliveryId once, only on the shared log", async () => {
    expect(new WebChannel(new MemoryDeliveryLog()).dedupesDeliveryIds).toBe(false);
    expect(new WebChannel(new FileDeliveryLog(join(tmpdir(), db.schema))).dedupesDeliveryIds).toBe(false);
    const web = await webOnSharedLog();
    expect(web.dedupesDeliveryIds).toBe(true);
    // A wrapper that observes sends (metrics, traces) keeps it.
    expect(withSend(web, (m, o) => web.send(m, o)).dedupesDeliveryIds).toBe(true);
  });

  it("shows once, without a claim, a reply the old owner sends as the new owner resends it", async () => {
    const open = deferred<void>();
    const started = deferred<void>();
    const aWeb = await webOnSharedLog(held(open.promise, () => started.resolve()));
    const bWeb = await webOnSharedLog();
    const a = await clusteredGateway("web-a1", {
      model: (clock) => new ScriptedModel([REPLY], clock),
      timing: STARVED,
      channel: () => aWeb,
    });
    const b = await clusteredGateway("web-b1", {
      model: (clock) => new ScriptedModel([REPLY], clock),
      timing: TAKER,
      channel: () => bWeb,
    });
    const aEvents = recorded(a.gateway);
    const bEvents = recorded(b.gateway);
    await a.gateway.start();
    await b.gateway.start();
    await a.gateway.receive({ session: "web:w1", channel: "web", text: "hello", id: "w1-m1" });
    // The old owner's send is in flight when its lease runs out; the new owner resends the open
    // intent, with no claim to wait for: it stores the reply.
    await started.promise;
    await leaseRunsOut(db, "web:w1");
    await eventually("the new owner to resend the open intent", () =>
      bEvents.some((e) => e.type === "final.delivered" && e.session === "web:w1"),
    );
    expect(await stored("web:w1", "Answer to: hello")).toHaveLength(1);
    // The old owner's send lands after it: the log answers the stored row and stores nothing.
    open.resolve();
    await eventually("the old owner to end its send", () => deliveredId(aEvents, "web:w1") !== undefined);
    const rows = await stored("web:w1", "Answer to: hello");
    expect(rows).toHaveLength(1);
    expect(deliveredId(aEvents, "web:w1")?.messageId).toBe(rows[0]);
    expect(deliveredId(bEvents, "web:w1")?.messageId).toBe(rows[0]);
    expect(await claims("web:w1")).toBe(0);
    expect([...aEvents, ...bEvents].some((e) => e.type === "delivery.claimedElsewhere")).toBe(false);
  }, 30_000);

  it("shows once, without a claim, a reply the old owner sends after the new owner ran the turn again", async () => {
    const release = deferred<void>();
    const called = deferred<void>();
    const gated = (inner: ModelProvider): ModelProvider => ({
      async complete(request) {
        called.resolve();
        await release.promise;
        return inner.complete(request);
      },
    });
    const aWeb = await webOnSharedLog();
    const bWeb = await webOnSharedLog();
    const a = await clusteredGateway("web-a2", {
      model: (clock) => gated(new ScriptedModel([REPLY], clock)),
      timing: STARVED,
      channel: () => aWeb,
    });
    const b = await clusteredGateway("web-b2", {
      model: (clock) => new ScriptedModel([REPLY], clock),
      timing: TAKER,
      channel: () => bWeb,
    });
    const aEvents = recorded(a.gateway);
    const bEvents = recorded(b.gateway);
    await a.gateway.start();
    await b.gateway.start();
    await a.gateway.receive({ session: "web:w2", channel: "web", text: "again", id: "w2-m1" });
    await called.promise;
    await leaseRunsOut(db, "web:w2");
    await eventually("the new owner to answer", () => deliveredId(bEvents, "web:w2") !== undefined);
    // The old owner finishes the same turn: the same deliveryId, already stored from the other process.
    release.resolve();
    await eventually("the old owner to end its turn", () => deliveredId(aEvents, "web:w2") !== undefined);
    const rows = await stored("web:w2", "Answer to: again");
    expect(rows).toHaveLength(1);
    expect(deliveredId(aEvents, "web:w2")?.messageId).toBe(rows[0]);
    expect(deliveredId(bEvents, "web:w2")?.messageId).toBe(rows[0]);
    expect(await claims("web:w2")).toBe(0);
  }, 30_000);
});
