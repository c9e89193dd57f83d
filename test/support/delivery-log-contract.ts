import { describe, expect, it } from "vitest";
import { type DeliveryLog, readDeliveriesAfter } from "../../src/adapters/http/delivery-log.js";
import { WebChannel } from "../../src/adapters/http/web-channel.js";

/** How a contract run opens logs: `open` a new one on the same storage (a restart, or another process). */
export interface DeliveryLogSubject {
  name: string;
  open: () => Promise<DeliveryLog>;
  /** The storage outlives a log (file, PostgreSQL): a second log sees what the first stored. */
  durable: boolean;
}

/**
 * What every delivery log does (memory, files, PostgreSQL): ordered, distinct ids, replay after a
 * `messageId`, and a `deliveryId` stored once. Sessions are named per test so one storage serves all.
 */
export function deliveryLogContract(subject: DeliveryLogSubject): void {
  describe(`delivery log contract: ${subject.name}`, () => {
    let n = 0;
    const session = () => `web:${subject.name}-${++n}-${Math.random().toString(36).slice(2, 8)}`;

    it("keeps a session's deliveries in order, with the receipts' ids, apart from other sessions", async () => {
      const log = await subject.open();
      const [s, other] = [session(), session()];
      const web = new WebChannel(log);
      const a = await web.send({ session: s, text: "one", kind: "reply", runId: "r1" });
      const b = await web.send({ session: s, text: "two", kind: "notice" });
      await web.send({ session: other, text: "elsewhere", kind: "reply" });
      expect(a.messageId).not.toBe(b.messageId);
      const records = await log.read(s);
      expect(records.map((r) => [r.messageId, r.kind, r.text, r.runId])).toEqual([
        [a.messageId, "reply", "one", "r1"],
        [b.messageId, "notice", "two", undefined],
      ]);
      expect((await log.read(other)).map((r) => r.text)).toEqual(["elsewhere"]);
      await log.close();
    });

    it("reads after a messageId: only the later ones; all of them after an unknown or absent id", async () => {
      const log = await subject.open();
      const s = session();
      const ids: string[] = [];
      for (const text of ["a", "b", "c"]) ids.push((await log.append(s, { kind: "reply", text })).messageId);
      expect((await readDeliveriesAfter(log, s, ids[0])).map((r) => r.text)).toEqual(["b", "c"]);
      expect(await readDeliveriesAfter(log, s, ids[2])).toEqual([]);
      expect((await readDeliveriesAfter(log, s, "9-unknown")).map((r) => r.text)).toEqual(["a", "b", "c"]);
      expect((await readDeliveriesAfter(log, s, undefined)).map((r) => r.text)).toEqual(["a", "b", "c"]);
      await log.close();
    });

    it("a repeated deliveryId returns the stored record and stores nothing, concurrent or not", async () => {
      const log = await subject.open();
      const s = session();
      const body = { kind: "reply" as const, text: "once", deliveryId: `final:${s}:1` };
      const [first, second] = await Promise.all([log.append(s, body), log.append(s, body)]);
      expect(second).toEqual(first);
      expect(await log.append(s, { ...body, text: "changed" })).toEqual(first);
      expect(await log.read(s)).toHaveLength(1);
      await log.close();
    });

    it("concurrent appends to one session get distinct ids in the order they were made", async () => {
      const log = await subject.open();
      const s = session();
      const records = await Promise.all(
        Array.from({ length: 20 }, (_, i) => log.append(s, { kind: "reply", text: `m${i}` })),
      );
      const texts = Array.from({ length: 20 }, (_, i) => `m${i}`);
      expect(records.map((r) => r.text)).toEqual(texts);
      expect(new Set(records.map((r) => r.messageId)).size).toBe(20);
      expect((await log.read(s)).map((r) => r.text)).toEqual(texts);
      await log.close();
    });

    if (subject.durable) {
      it("a second log on the same storage sees the deliveries and the deliveryIds of the first", async () => {
        const first = await subject.open();
        const s = session();
        const body = { kind: "reply" as const, text: "once", deliveryId: `final:${s}:2` };
        const stored = await first.append(s, body);
        await first.append(s, { kind: "notice", text: "then" });
        await first.close();
        const second = await subject.open();
        expect(await second.append(s, body)).toEqual(stored);
        expect((await readDeliveriesAfter(second, s, stored.messageId)).map((r) => r.text)).toEqual(["then"]);
        const next = await second.append(s, { kind: "reply", text: "third" });
        expect(next.messageId.startsWith("3-")).toBe(true);
        await second.close();
      });
    }
  });
}
