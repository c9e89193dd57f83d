import { describe, expect, it } from "vitest";
import { PostgresDeliveryLog } from "../../../src/adapters/postgres/postgres-delivery-log.js";
import { deliveryLogContract } from "../../support/delivery-log-contract.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { countStatements } from "../../support/statement-count.js";

const db = usePostgresSchema("deliveries");
const open = (options: { keep?: number } = {}) =>
  PostgresDeliveryLog.connect({ url: db.url, schema: db.schema, pollMs: 60_000, ...options });

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
    // (Woken once more, maybe, as the reader's LISTEN comes into effect: see the next test.)
    expect(new Set(woken)).toEqual(new Set(["web:w1"]));
    expect((await reader.readAfter("web:w1", undefined)).map((r) => r.text)).toEqual(["hi"]);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("a first watch misses no delivery stored before its LISTEN, and a watch after the last one ended is woken again", async () => {
    const [writer, reader] = await Promise.all([open(), open()]);
    const until = async (done: () => boolean) => {
      const deadline = Date.now() + 5000;
      while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    };
    // Stored in the same tick as the first watch, before its LISTEN is in effect: still woken.
    let woken = 0;
    const off = reader.watch("web:l1", () => woken++);
    await writer.append("web:l1", { kind: "reply", text: "first" });
    await until(() => woken > 0);
    expect(woken).toBeGreaterThan(0);
    // Nobody watches any more, then someone does again: NOTIFY wakes it again (the poll is a minute away).
    off();
    let again = 0;
    reader.watch("web:l1", () => again++);
    await until(() => again > 0);
    const before = again;
    await writer.append("web:l1", { kind: "reply", text: "second" });
    await until(() => again > before);
    expect(again).toBeGreaterThan(before);
    expect((await reader.readAfter("web:l1", undefined)).map((r) => r.text)).toEqual(["first", "second"]);
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

describe("pruning web_deliveries", () => {
  const rows = async (session: string) =>
    (
      await db.pool.query<{ seq: string }>(
        `SELECT seq FROM ${db.schema}.web_deliveries WHERE session_key = $1 ORDER BY seq`,
        [session],
      )
    ).rows.map((row) => Number(row.seq));
  const head = async (session: string) =>
    Number(
      (
        await db.pool.query<{ last_seq: string }>(
          `SELECT last_seq FROM ${db.schema}.web_delivery_heads WHERE session_key = $1`,
          [session],
        )
      ).rows[0]?.last_seq,
    );

  it("deletes old rows every few appends and never renumbers: seq stays gap-free and increasing", async () => {
    const log = await open({ keep: 5 });
    const session = "web:prune";
    for (let i = 0; i < 37; i++) {
      await log.append(session, { kind: "reply", text: `m${i}` });
      const seqs = await rows(session);
      // At most keep + step (5 + 5) rows stay, the newest ones, consecutive up to the head.
      expect(seqs.length).toBeLessThanOrEqual(10);
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, k) => i + 2 - seqs.length + k));
    }
    expect(await head(session)).toBe(37);
    expect((await log.read(session)).map((r) => r.text)).toEqual(["m32", "m33", "m34", "m35", "m36"]);
    await log.close();
  });

  it("a backlog stored before retention is read as its newest `keep` and drained 1000 rows per prune", async () => {
    const session = "web:backlog";
    await db.pool.query(
      `INSERT INTO ${db.schema}.web_deliveries (session_key, seq, message_id, kind, text, at_ms)
       SELECT $1, n, n || '-old', 'reply', 'm' || n, 0 FROM generate_series(1, 2500) AS n`,
      [session],
    );
    await db.pool.query(`INSERT INTO ${db.schema}.web_delivery_heads VALUES ($1, 2500)`, [session]);
    const log = await open({ keep: 5 });
    expect((await log.read(session)).map((r) => r.messageId)).toEqual(
      ["2496", "2497", "2498", "2499", "2500"].map((n) => `${n}-old`),
    );
    expect((await log.readAfter(session, "10-old")).map((r) => r.text)).toEqual([
      "m2496",
      "m2497",
      "m2498",
      "m2499",
      "m2500",
    ]);
    for (let i = 0; i < 5; i++) await log.append(session, { kind: "reply", text: `new${i}` });
    expect((await rows(session))[0]).toBe(1001); // seq 2505 pruned the oldest 1000
    for (let i = 5; i < 10; i++) await log.append(session, { kind: "reply", text: `new${i}` });
    expect((await rows(session))[0]).toBe(2001);
    for (let i = 10; i < 15; i++) await log.append(session, { kind: "reply", text: `new${i}` });
    expect(await rows(session)).toEqual([2511, 2512, 2513, 2514, 2515]);
    await log.close();
  });

  it("several processes appending and pruning one session at once", async () => {
    const logs = await Promise.all([open({ keep: 4 }), open({ keep: 4 }), open({ keep: 4 })]);
    const session = "web:prune-race";
    const records = await Promise.all(
      Array.from({ length: 60 }, (_, i) => logs[i % 3]!.append(session, { kind: "reply", text: `m${i}` })),
    );
    const seqs = records.map((r) => Number.parseInt(r.messageId, 10)).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(await head(session)).toBe(60);
    const stored = await rows(session);
    expect(stored.at(-1)).toBe(60);
    expect(stored.length).toBeLessThanOrEqual(8);
    expect(stored).toEqual(Array.from({ length: stored.length }, (_, k) => 61 - stored.length + k));
    const newest = records.filter((r) => Number.parseInt(r.messageId, 10) > 56);
    newest.sort((a, b) => Number.parseInt(a.messageId, 10) - Number.parseInt(b.messageId, 10));
    for (const log of logs) expect(await log.read(session)).toEqual(newest);
    await Promise.all(logs.map((log) => log.close()));
  });
});

describe("appends of several sessions at once", () => {
  it("share one statement, each session's seq its own, a stored delivery id answered as stored", async () => {
    const log = await open();
    const first = await log.append("web:b1", { kind: "reply", text: "one", deliveryId: "b1-d1" });
    const { result: records, count: statements } = await countStatements(
      () =>
        Promise.all([
          log.append("web:b0", { kind: "reply", text: "zero" }),
          log.append("web:b1", { kind: "reply", text: "one again", deliveryId: "b1-d1" }),
          log.append("web:b2", { kind: "notice", text: "two" }),
        ]),
      "tiller.webDeliveryStoreAll",
    );
    expect(statements).toBe(1);
    expect(records[1]).toEqual(first);
    expect(records.map((r) => [r.kind, r.text])).toEqual([
      ["reply", "zero"],
      ["reply", "one"],
      ["notice", "two"],
    ]);
    expect((await log.read("web:b1")).map((r) => r.text)).toEqual(["one"]);
    expect((await log.read("web:b2")).map((r) => r.messageId)).toEqual([records[2]!.messageId]);
    await log.close();
  });
});
