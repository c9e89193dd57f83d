import { describe, expect, it } from "vitest";
import { PostgresDeliveryLog } from "../../../src/adapters/postgres/postgres-delivery-log.js";
import { deliveryLogContract } from "../../support/delivery-log-contract.js";
import { usePostgresSchema } from "../../support/postgres.js";

const db = usePostgresSchema("deliveries");
const open = () => PostgresDeliveryLog.connect({ url: db.url, schema: db.schema, pollMs: 60_000 });

deliveryLogContract({ name: "postgres", durable: true, open });

describe("the PostgreSQL delivery log across processes", () => {
  it("two logs appending to one session at once: gap-free seq, each deliveryId stored once", async () => {
    const [a, b] = await Promise.all([open(), open()]);
    const session = "web:race";
    const appends = Array.from({ length: 30 }, (_, i) =>
      (i % 2 ? a : b).append(session, { kind: "reply", text: `m${i % 10}`, deliveryId: `d${i % 10}` }),
    );
    const records = await Promise.all(appends);
    for (let i = 0; i < 30; i++) expect(records[i]).toEqual(records[i % 10]);
    const { rows } = await db.pool.query<{ seq: string; delivery_id: string }>(
      `SELECT seq, delivery_id FROM ${db.schema}.web_deliveries WHERE session_key = $1 ORDER BY seq`,
      [session],
    );
    expect(rows.map((row) => Number(row.seq))).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(new Set(rows.map((row) => row.delivery_id)).size).toBe(10);
    expect((await b.read(session)).map((r) => r.messageId)).toEqual(
      (await a.read(session)).map((r) => r.messageId),
    );
    await Promise.all([a.close(), b.close()]);
  });

  it("an append on one log wakes the watchers of that session on another, by NOTIFY", async () => {
    const [writer, reader] = await Promise.all([open(), open()]);
    const woken: string[] = [];
    reader.watch("web:w1", () => woken.push("web:w1"));
    const off = reader.watch("web:w2", () => woken.push("web:w2"));
    off();
    await writer.append("web:w1", { kind: "reply", text: "hi" });
    await writer.append("web:w2", { kind: "reply", text: "unwatched" });
    // The poll is a minute away: only the NOTIFY can wake it this soon.
    const deadline = Date.now() + 5000;
    while (woken.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(woken).toEqual(["web:w1"]);
    expect((await reader.readAfter("web:w1", undefined)).map((r) => r.text)).toEqual(["hi"]);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("a session key too long for a NOTIFY payload is stored and still wakes its watchers", async () => {
    const [writer, reader] = await Promise.all([open(), open()]);
    const session = `web:${"k".repeat(9000)}`;
    let woken = 0;
    reader.watch(session, () => woken++);
    const record = await writer.append(session, { kind: "reply", text: "long" });
    const deadline = Date.now() + 5000;
    while (woken === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(woken).toBeGreaterThan(0);
    expect(await reader.readAfter(session, undefined)).toEqual([record]);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("a delivery whose NOTIFY was lost reaches its stream by the poll, and a poll with nothing new wakes no stream", async () => {
    const reader = await PostgresDeliveryLog.connect({ url: db.url, schema: db.schema, pollMs: 100 });
    const woken = new Map<string, number>();
    const sessions = Array.from({ length: 20 }, (_, i) => `web:poll-${i}`);
    for (const session of sessions)
      reader.watch(session, () => woken.set(session, (woken.get(session) ?? 0) + 1));
    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 5000;
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    };
    // The first poll learns where each session stands.
    await until(() => woken.size === sessions.length);
    woken.clear();
    await new Promise((r) => setTimeout(r, 500));
    expect(woken.size).toBe(0);
    // Another process's delivery, stored without a NOTIFY (as when the notification is lost).
    await db.pool.query(
      `INSERT INTO ${db.schema}.web_delivery_heads (session_key, last_seq) VALUES ('web:poll-7', 1);
       INSERT INTO ${db.schema}.web_deliveries (session_key, seq, message_id, kind, text, at_ms)
       VALUES ('web:poll-7', 1, '1-lost', 'reply', 'found by the poll', 0)`,
    );
    await until(() => woken.size > 0);
    expect([...woken.keys()]).toEqual(["web:poll-7"]);
    expect((await reader.readAfter("web:poll-7", undefined)).map((r) => r.text)).toEqual([
      "found by the poll",
    ]);
    await reader.close();
  });
});
