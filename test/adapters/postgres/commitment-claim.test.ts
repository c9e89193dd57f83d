import { afterAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import type { OutboundMessage } from "../../../src/ports/channel.js";
import type { ModelReply } from "../../../src/ports/model.js";
import {
  commitmentGateway,
  decision,
  HOUR,
  PROPOSAL,
  recordingModel,
  StallingChannel,
} from "../../support/commitment-gateway.js";
import { usePostgresSchema } from "../../support/postgres.js";

// The commitments heartbeat of several gateways on one database: each due commitment is claimed
// (FOR UPDATE SKIP LOCKED) by one process, reviewed and sent by it alone; a claim of a process that
// died before its send intent is taken again after the lease, and one that died after it is never sent.

const db = usePostgresSchema("claim");
afterAll(async () => {
  for (const suffix of ["a", "b", "c", "d", "e"])
    await db.pool.query(`DROP SCHEMA IF EXISTS ${db.schema}_${suffix} CASCADE`);
});
const SESSIONS = ["web:1", "web:2", "web:3", "web:4", "web:5", "web:6"];

async function storeFor(schema: string, processId: string) {
  return PostgresStore.connect({ url: db.url, schema, processId, commitmentLeaseMs: 3 * HOUR, poolSize: 3 });
}

/** Commitments due 1 h from now, one per session, made (and stored) by a first gateway. */
async function seed(schema: string, sessions: string[]) {
  const clock = new SimulatedClock();
  const store = await storeFor(schema, "seed");
  const seeder = commitmentGateway({ model: recordingModel(() => decision("unclear")).model, clock, store });
  await seeder.gateway.start();
  for (const session of sessions) {
    await seeder.gateway.receive({ session, channel: "web", id: `${session}-m1`, text: "Book a room." });
    await seeder.idle(10);
    const outcome = await seeder.gateway.commitments.propose(session, PROPOSAL as never, {
      sourceMessageId: `${session}-m1`,
    });
    expect(outcome).toMatchObject({ accepted: true });
  }
  await seeder.gateway.stop();
  return seeder.gateway.commitments.list().map((c) => c.id);
}

/** One gateway "process" on the schema, started: its own store (claimer `processId`) and model. */
async function processOn(
  schema: string,
  processId: string,
  review: () => ModelReply | Promise<ModelReply>,
  options: { clock?: SimulatedClock; channel?: StallingChannel } = {},
) {
  const { model, reviews } = recordingModel(review);
  const g = commitmentGateway({
    model,
    clock: options.clock ?? new SimulatedClock(100),
    store: await storeFor(schema, processId),
    ...(options.channel ? { channel: options.channel } : {}),
  });
  await g.gateway.start();
  return { ...g, reviews };
}

/** A channel whose commitment sends wait until `release()` (a send still on its way). */
class ReleasableChannel extends StallingChannel {
  readonly waiting: Array<() => void> = [];
  override async send(message: OutboundMessage) {
    if (message.kind !== "commitment") return super.send(message);
    this.sent.push(message);
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return { messageId: "out-1" };
  }
  release(): void {
    for (const resume of this.waiting.splice(0)) resume();
  }
}

const commitmentSends = (channel: { sent: Array<{ kind: string; deliveryId?: string }> }) =>
  channel.sent.filter((sent) => sent.kind === "commitment").map((sent) => sent.deliveryId);

async function statuses(schema: string) {
  const { rows } = await db.pool.query<{
    id: string;
    status: string;
    sending: boolean;
    claimed_by: string | null;
  }>(`SELECT id, status, sending, claimed_by FROM ${schema}.commitments ORDER BY id`);
  return rows;
}

describe("commitments on one PostgreSQL, several gateways", () => {
  it("sends each due commitment exactly once across three gateways with the same commitments", async () => {
    const schema = `${db.schema}_a`;
    const ids = await seed(schema, SESSIONS);
    const clock = new SimulatedClock(100);
    const text = "Do you still need the room?";
    const gateways = await Promise.all(
      ["pa", "pb", "pc"].map((name) =>
        processOn(schema, name, () => decision("still_pending_user", text), { clock }),
      ),
    );
    // Every gateway loaded all six; maxPerTick 3, so two ticks at least, each raced by three processes.
    expect(gateways.map((g) => g.gateway.commitments.list({ status: "pending" }).length)).toEqual([6, 6, 6]);
    await clock.runUntilIdle({ isBusy: () => gateways.some((g) => g.gateway.isBusy), until: 30 * HOUR });
    const sent = gateways.flatMap((g) => commitmentSends(g.channel));
    expect(sent.sort()).toEqual(ids.map((id) => `commitment:${id}`).sort());
    // Reviewed once each: a process that lost the claim never asked its model.
    expect(gateways.reduce((n, g) => n + g.reviews().length, 0)).toBe(6);
    expect((await statuses(schema)).map((row) => [row.status, row.claimed_by])).toEqual(
      ids.map(() => ["sent", null]),
    );
    // Each process's memory caught up with the others' sends through its claims.
    for (const g of gateways) expect(g.gateway.commitments.list({ status: "pending" })).toEqual([]);
    for (const g of gateways) await g.gateway.stop();
  });

  it("never sends a commitment whose claimer died after writing its send intent, and settles it once the claim ran out", async () => {
    const schema = `${db.schema}_b`;
    const [id] = await seed(schema, ["web:1"]);
    const text = "Do you still need the room?";
    const stalling = new StallingChannel();
    const a = await processOn(schema, "pa", () => decision("still_pending_user", text), {
      channel: stalling,
    });
    const b = await processOn(schema, "pb", () => decision("still_pending_user", text));
    // A claims it at the 1 h tick, writes its intent and calls the channel, which never answers.
    await a.idle(HOUR + 1000);
    expect(commitmentSends(stalling)).toEqual([`commitment:${id}`]);
    expect(await statuses(schema)).toMatchObject([{ status: "pending", sending: true, claimed_by: "pa" }]);
    // kill -9 of A: its clock stops. While A's claim (3 h) may still be alive, B leaves the send alone.
    await b.idle(3 * HOUR + 1000);
    expect(b.ofType("commitment.sendInterrupted")).toEqual([]);
    expect(await statuses(schema)).toMatchObject([{ status: "pending", sending: true, claimed_by: "pa" }]);
    // Once it ran out, B settles it without a restart: sent, receipt unknown, never sent again.
    await b.idle(30 * HOUR);
    expect(commitmentSends(b.channel)).toEqual([]);
    expect(b.reviews()).toEqual([]);
    expect(b.ofType("commitment.sendInterrupted")).toMatchObject([{ id, receipt: "unknown", text }]);
    expect(b.gateway.commitments.list()[0]).toMatchObject({
      status: "sent",
      sent: { text, receipt: "unknown" },
    });
    expect(await statuses(schema)).toMatchObject([{ status: "sent", sending: false, claimed_by: null }]);
    await b.gateway.stop();
  });

  it("leaves a send another live process has on its way to that send's receipt, even at its own start", async () => {
    const schema = `${db.schema}_e`;
    const [id] = await seed(schema, ["web:1"]);
    const text = "Do you still need the room?";
    const slow = new ReleasableChannel();
    const a = await processOn(schema, "pa", () => decision("still_pending_user", text), { channel: slow });
    await a.idle(HOUR + 1000);
    expect(slow.waiting).toHaveLength(1);
    // B starts (and ticks) while A's send is on its way: it must not call it cut off.
    const b = await processOn(schema, "pb", () => decision("still_pending_user", text), {
      clock: new SimulatedClock(a.clock.now()),
    });
    await b.idle(b.clock.now() + 2 * HOUR);
    expect(b.ofType("commitment.sendInterrupted")).toEqual([]);
    slow.release();
    await a.idle(a.clock.now() + 1000);
    expect(a.ofType("commitment.sent")).toMatchObject([{ id }]);
    const { rows } = await db.pool.query<{ body: string }>(`SELECT body FROM ${schema}.commitments`);
    expect(JSON.parse(rows[0]!.body)).toMatchObject({ status: "sent", sent: { receipt: "committed" } });
    await a.gateway.stop();
    await b.gateway.stop();
  });

  it("takes a dead claimer's commitment again once its lease ran out, and sends it once", async () => {
    const schema = `${db.schema}_c`;
    const [id] = await seed(schema, ["web:1"]);
    const text = "Is the room still needed?";
    // A's review never answers: A dies in the middle of it, holding the claim, before any intent.
    const a = await processOn(schema, "pa", () => new Promise<never>(() => {}));
    const b = await processOn(schema, "pb", () => decision("still_pending_user", text));
    await a.idle(HOUR + 1000);
    expect(a.reviews()).toHaveLength(1);
    expect(await statuses(schema)).toMatchObject([{ status: "pending", sending: false, claimed_by: "pa" }]);
    // B's ticks at 1 h, 2 h and 3 h find A's claim alive (until 1 h + 3 h): no review, no send.
    await b.idle(3 * HOUR + 1000);
    expect(b.reviews()).toEqual([]);
    expect(commitmentSends(b.channel)).toEqual([]);
    // At 4 h the lease has run out: B claims it, reviews it and sends it, once.
    await b.idle(30 * HOUR);
    expect(b.reviews()).toHaveLength(1);
    expect(commitmentSends(b.channel)).toEqual([`commitment:${id}`]);
    const [sentEvent] = b.ofType("commitment.sent");
    expect(sentEvent?.at).toBe(4 * HOUR + 100);
    expect(await statuses(schema)).toMatchObject([{ status: "sent", sending: false, claimed_by: null }]);
    await b.gateway.stop();
  });

  it("reviews and sends, on another process, a commitment made after that process started", async () => {
    const schema = `${db.schema}_d`;
    await seed(schema, []);
    const text = "Shall I book the room?";
    const a = await processOn(schema, "pa", () => decision("still_pending_user", text));
    const b = await processOn(schema, "pb", () => decision("still_pending_user", text));
    await a.say("m1", "Book a room for Friday.");
    await a.idle(200);
    const made = await a.gateway.commitments.propose("web:1", PROPOSAL as never, { sourceMessageId: "m1" });
    expect(made).toMatchObject({ accepted: true });
    // A dies before it is due; B never heard of it, and finds it in the store at a tick.
    expect(b.gateway.commitments.list()).toEqual([]);
    await b.idle(30 * HOUR);
    expect(a.reviews()).toEqual([]);
    expect(b.reviews()).toHaveLength(1);
    expect(commitmentSends(b.channel)).toEqual([`commitment:${made.accepted ? made.id : ""}`]);
    expect(b.gateway.commitments.list()).toMatchObject([{ status: "sent", sent: { text } }]);
    await b.gateway.stop();
  });
});
