import { describe, expect, it } from "vitest";
import { WebChannel } from "../../src/adapters/channels/web-channel.js";
import {
  type DeliveryLog,
  type DeliveryLogOptions,
  type DeliveryRecord,
  readDeliveriesAfter,
} from "../../src/ports/delivery-log.js";

/** How a contract run opens logs: `open` a new one on the same storage (a restart, or another process). */
export interface DeliveryLogSubject {
  name: string;
  open: (options?: DeliveryLogOptions) => Promise<DeliveryLog>;
  /** The storage outlives a log (file, PostgreSQL): a second log sees what the first stored. */
  durable: boolean;
}

/**
 * What every delivery log does (memory, files, PostgreSQL): ordered, distinct ids, replay after a
 * `messageId`, a `deliveryId` stored once, and retention (the newest `keep` stay readable, with their
 * ids). Sessions are named per test so one storage serves all.
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

    const appendAll = async (log: DeliveryLog, s: string, count: number, tag = "m") => {
      const records: DeliveryRecord[] = [];
      for (let i = 0; i < count; i++)
        records.push(
          await log.append(s, { kind: "reply", text: `${tag}${i}`, deliveryId: `${tag}:${s}:${i}` }),
        );
      return records;
    };

    it("keeps the newest `keep` after every append, in order, with their original ids", async () => {
      const log = await subject.open({ keep: 3 });
      const s = session();
      const records: DeliveryRecord[] = [];
      for (let i = 0; i < 14; i++) {
        records.push(await log.append(s, { kind: "reply", text: `m${i}` }));
        expect(await log.read(s)).toEqual(records.slice(-3));
      }
      // Pruning never renumbers: each id is still `<its position in the session>-…`.
      expect(records.map((r) => Number.parseInt(r.messageId, 10))).toEqual(
        Array.from({ length: 14 }, (_, i) => i + 1),
      );
      await log.close();
    });

    it("an `after` id that was pruned is unknown: the replay starts from the oldest kept delivery", async () => {
      const log = await subject.open({ keep: 3 });
      const s = session();
      const records = await appendAll(log, s, 10);
      const texts = (list: readonly DeliveryRecord[]) => list.map((r) => r.text);
      expect(texts(await readDeliveriesAfter(log, s, undefined))).toEqual(["m7", "m8", "m9"]);
      expect(texts(await readDeliveriesAfter(log, s, records[0]!.messageId))).toEqual(["m7", "m8", "m9"]);
      expect(texts(await readDeliveriesAfter(log, s, records[6]!.messageId))).toEqual(["m7", "m8", "m9"]);
      expect(texts(await readDeliveriesAfter(log, s, records[7]!.messageId))).toEqual(["m8", "m9"]);
      expect(await readDeliveriesAfter(log, s, records[9]!.messageId)).toEqual([]);
      await log.close();
    });

    it("a resend of a kept deliveryId returns the stored record; a pruned one is stored again", async () => {
      const log = await subject.open({ keep: 3 });
      const s = session();
      const records = await appendAll(log, s, 10);
      const resend = (i: number) =>
        log.append(s, { kind: "reply", text: `again${i}`, deliveryId: `m:${s}:${i}` });
      expect(await resend(9)).toEqual(records[9]);
      expect(await resend(7)).toEqual(records[7]);
      expect(await log.read(s)).toEqual(records.slice(-3));
      const again = await resend(0);
      expect(again.messageId.startsWith("11-")).toBe(true);
      expect((await log.read(s)).map((r) => r.text)).toEqual(["m8", "m9", "again0"]);
      await log.close();
    });

    it("with keep Infinity nothing is pruned", async () => {
      const log = await subject.open({ keep: Number.POSITIVE_INFINITY });
      const s = session();
      const records = await appendAll(log, s, 12);
      expect(await log.read(s)).toEqual(records);
      expect(await readDeliveriesAfter(log, s, records[0]!.messageId)).toEqual(records.slice(1));
      await log.close();
    });

    it("refuses a keep that is not a positive integer, naming the option", async () => {
      for (const keep of [0, -1, 2.5, Number.NaN])
        await expect(subject.open({ keep })).rejects.toMatchObject({ code: "CONFIG_INVALID", field: "keep" });
    });

    if (subject.durable) {
      it("after pruning, a second log keeps the newest, the seq and the kept deliveryIds", async () => {
        const first = await subject.open({ keep: 3 });
        const s = session();
        const records = await appendAll(first, s, 11);
        await first.close();
        const second = await subject.open({ keep: 3 });
        expect(await second.read(s)).toEqual(records.slice(-3));
        expect(await second.append(s, { kind: "reply", text: "x", deliveryId: `m:${s}:10` })).toEqual(
          records[10],
        );
        const next = await second.append(s, { kind: "reply", text: "twelfth" });
        expect(next.messageId.startsWith("12-")).toBe(true);
        expect(await second.read(s)).toEqual([...records.slice(-2), next]);
        await second.close();
        // A smaller keep on the same storage reads fewer; none is renumbered.
        const third = await subject.open({ keep: 2 });
        expect(await third.read(s)).toEqual([records[10], next]);
        await third.close();
      });

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
