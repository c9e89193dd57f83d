import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StaleWriterError, TillerError } from "../../src/errors.js";
import type { CommitmentStatus } from "../../src/ports/commitment.js";
import type { RecordBody, TranscriptRecord, TranscriptStore } from "../../src/ports/store.js";
import { UNDELIVERED_FINAL } from "../../src/ports/store.js";
import { commitmentRecord } from "../support/commitment-record.js";

export interface StoreFixture {
  store: TranscriptStore;
  /** Closes the store and returns a fresh one over the same data (a gateway restart). */
  reopen?: () => Promise<TranscriptStore>;
  cleanup: () => Promise<void>;
}

const user = (text: string, messageId = text): RecordBody => ({ role: "user", text, messageId });
const final = (text: string, delivered = false): RecordBody => ({
  role: "assistant",
  text,
  runId: "run-1",
  delivered,
});
const marker = (finalSeq: number): RecordBody => ({
  role: "custom",
  customType: UNDELIVERED_FINAL,
  display: false,
  details: { deliveryMode: "automatic", delivered: false, finalSeq, finalTextLength: 5 },
});
const texts = (records: TranscriptRecord[]) => records.map((r) => ("text" in r ? r.text : r.role));

/**
 * The behaviour every TranscriptStore shares (docs/store.md). Each implementation runs it with a factory
 * that builds a fresh, empty store per test.
 *
 * @example
 * ```ts
 * storeContract("MemoryStore", async () => ({ store: new MemoryStore(), cleanup: async () => {} }));
 * ```
 */
export function storeContract(
  name: string,
  makeStore: () => Promise<StoreFixture>,
  /** The store implements the optional commitment methods: their contract applies to it too. */
  capabilities: { commitments?: boolean } = {},
): void {
  describe(`${name} (store contract)`, () => {
    let fixture: StoreFixture;
    let store: TranscriptStore;

    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it("opens a new transcript empty at revision 1, and opening again returns the same head", async () => {
      const head = await store.open("A");
      expect(head).toEqual({ sessionId: expect.any(String), revision: 1, lastSeq: 0 });
      expect(await store.open("A")).toEqual(head);
      expect(await store.read("A")).toEqual([]);
      expect(await store.readWindow("A")).toEqual([]);
    });

    it("assigns seq 1, 2, 3… in append order and stamps the header fields", async () => {
      const head = await store.open("A");
      const first = await store.append("A", [user("one"), user("two")], head);
      const second = await store.append("A", [user("three")], head);
      expect([...first, ...second].map((r) => r.seq)).toEqual([1, 2, 3]);
      for (const record of [...first, ...second]) {
        expect(record).toMatchObject({ sessionId: head.sessionId, revision: 1, at: expect.any(Number) });
      }
      expect(texts(await store.read("A"))).toEqual(["one", "two", "three"]);
      expect((await store.open("A")).lastSeq).toBe(3);
    });

    it("keeps call order for concurrent appends to one session", async () => {
      const head = await store.open("A");
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => store.append("A", [user(`m${i}`)], head)),
      );
      expect(results.map(([r]) => r!.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(texts(await store.read("A"))).toEqual(Array.from({ length: 40 }, (_, i) => `m${i}`));
    });

    it("gives every record a unique id, across appends and sessions", async () => {
      const ids: string[] = [];
      for (const key of ["A", "B", "C"]) {
        const head = await store.open(key);
        for (let i = 0; i < 20; i++)
          ids.push(...(await store.append(key, [user("x"), user("y")], head)).map((r) => r.id));
      }
      expect(new Set(ids).size).toBe(120);
    });

    it("round-trips every record role", async () => {
      const head = await store.open("A");
      const bodies: RecordBody[] = [
        { role: "user", text: "hi", messageId: "m1", channel: "telegram" },
        { role: "toolCall", callId: "c1", name: "search", args: { q: "x", n: [1, 2] }, runId: "r1" },
        { role: "toolResult", callId: "c1", status: "done", result: { hits: [] }, runId: "r1" },
        { role: "assistant", text: "ok", runId: "r1", delivered: true, deliveryMessageId: "d1" },
        { role: "custom", customType: "note", display: true, details: { a: null } },
      ];
      await store.append("A", bodies, head);
      expect(await store.read("A")).toEqual(bodies.map((body) => expect.objectContaining(body)));
    });

    it("refuses a writer with a wrong sessionId and writes nothing", async () => {
      const head = await store.open("A");
      await store.append("A", [user("kept")], head);
      const stale = { sessionId: "not-the-session", revision: head.revision };
      await expect(store.append("A", [user("lost")], stale)).rejects.toBeInstanceOf(StaleWriterError);
      await expect(store.reset("A", stale)).rejects.toMatchObject({ code: "STALE_WRITER" });
      await expect(store.rotate("A", stale)).rejects.toMatchObject({ code: "STALE_WRITER" });
      expect(texts(await store.read("A"))).toEqual(["kept"]);
      expect(await store.open("A")).toEqual({ ...head, lastSeq: 1 });
    });

    it("refuses a writer with an old revision after a reset and writes nothing", async () => {
      const head = await store.open("A");
      await store.append("A", [user("before")], head);
      const next = await store.reset("A", head);
      expect(next.revision).toBe(head.revision + 1);
      await expect(store.append("A", [user("late")], head)).rejects.toBeInstanceOf(StaleWriterError);
      expect(texts(await store.read("A"))).toEqual(["before"]);
    });

    it("refuses an append issued after a reset that has not finished yet", async () => {
      const head = await store.open("A");
      const reset = store.reset("A", head);
      const late = store.append("A", [user("late")], head);
      await expect(late).rejects.toMatchObject({ code: "STALE_WRITER" });
      await reset;
      expect(await store.read("A")).toEqual([]);
    });

    it("refuses an append to a session that was never opened", async () => {
      await expect(
        store.append("never", [user("x")], { sessionId: "s", revision: 1 }),
      ).rejects.toBeInstanceOf(StaleWriterError);
      expect(await store.read("never")).toEqual([]);
    });

    it("rejects an empty session key with SESSION_KEY_INVALID", async () => {
      await expect(store.open("")).rejects.toMatchObject({ code: "SESSION_KEY_INVALID" });
      await expect(store.open("\ud800")).rejects.toBeInstanceOf(TillerError);
    });

    it("keeps keys that differ only by case or Unicode normalization apart", async () => {
      const keys = ["telegram:1", "Telegram:1", "caf\u00e9", "cafe\u0301"];
      for (const key of keys) {
        const head = await store.open(key);
        await store.append(key, [user(key)], head);
      }
      for (const key of keys) expect(texts(await store.read(key))).toEqual([key]);
      expect(await store.sessions()).toEqual([...keys].sort());
    });

    it("reset starts a new revision with an empty window, keeps history and continues seq", async () => {
      const head = await store.open("A");
      await store.append("A", [user("old")], head);
      const next = await store.reset("A", head);
      expect(next).toEqual({ sessionId: head.sessionId, revision: 2, lastSeq: 1 });
      expect(await store.readWindow("A")).toEqual([]);
      const [fresh] = await store.append("A", [user("new")], next);
      expect(fresh).toMatchObject({ seq: 2, revision: 2 });
      expect(texts(await store.readWindow("A"))).toEqual(["new"]);
      expect(texts(await store.read("A"))).toEqual(["old", "new"]);
    });

    it("rotate starts an empty window and keeps every record readable", async () => {
      const head = await store.open("A");
      await store.append("A", [user("a"), user("b")], head);
      expect(await store.rotate("A", head)).toEqual({ ...head, lastSeq: 2 });
      expect(await store.readWindow("A")).toEqual([]);
      await store.append("A", [user("c")], head);
      expect(texts(await store.readWindow("A"))).toEqual(["c"]);
      expect(texts(await store.read("A"))).toEqual(["a", "b", "c"]);
    });

    it("keeps a final and its undelivered marker together when a rotation falls between them", async () => {
      const head = await store.open("A");
      await store.append("A", [user("q")], head);
      const [stranded] = await store.append("A", [final("reply")], head);
      await store.rotate("A", head);
      await store.append("A", [marker(stranded!.seq), user("next")], head);
      const window = await store.readWindow("A");
      expect(window.map((r) => r.seq)).toEqual([2, 3, 4]);
      expect(window[0]).toMatchObject({ role: "assistant", text: "reply" });
      expect(window[1]).toMatchObject({ role: "custom", customType: UNDELIVERED_FINAL });
    });

    it("pairs a marker without finalSeq with the assistant record just before it", async () => {
      const head = await store.open("A");
      await store.append("A", [user("q"), final("reply")], head);
      await store.rotate("A", head);
      const bare = marker(0);
      if (bare.role === "custom") delete bare.details.finalSeq;
      await store.append("A", [bare], head);
      expect((await store.readWindow("A")).map((r) => r.seq)).toEqual([2, 3]);
    });

    it("keeps a final and its marker together in the old window when rotating after both", async () => {
      const head = await store.open("A");
      const [stranded] = await store.append("A", [final("reply")], head);
      await store.append("A", [marker(stranded!.seq)], head);
      await store.rotate("A", head);
      expect(await store.readWindow("A")).toEqual([]);
      await store.append("A", [user("next")], head);
      expect(texts(await store.readWindow("A"))).toEqual(["next"]);
    });

    it("saves, overwrites, loads and deletes (null) resume state", async () => {
      expect(await store.loadState("A")).toBeNull();
      await store.saveState("A", { pending: ["m1"], n: 1 });
      expect(await store.loadState("A")).toEqual({ pending: ["m1"], n: 1 });
      await store.saveState("A", { pending: [], n: 2 });
      expect(await store.loadState("A")).toEqual({ pending: [], n: 2 });
      await store.saveState("A", null);
      expect(await store.loadState("A")).toBeNull();
      expect(await store.sessions()).toEqual([]);
    });

    it("lists each session with a transcript or a state once", async () => {
      await store.open("with-transcript");
      await store.saveState("with-state", { x: 1 });
      await store.open("both");
      await store.saveState("both", { y: 2 });
      expect(await store.sessions()).toEqual(["both", "with-state", "with-transcript"]);
    });

    it("lists only the sessions whose key starts with a prefix, when asked", async () => {
      for (const key of ["web:1", "web:1:sub:1", "web:1:sub:2", "web:10:sub:1", "slack:web:1:sub:3"])
        await store.open(key);
      await store.saveState("web:1:sub:3", { x: 1 });
      expect(await store.sessions("web:1:sub:")).toEqual(["web:1:sub:1", "web:1:sub:2", "web:1:sub:3"]);
      expect(await store.sessions("%")).toEqual([]);
      expect(await store.sessions("")).toEqual(await store.sessions());
    });

    it("returns copies: mutating inputs or results never changes what is stored", async () => {
      const head = await store.open("A");
      const body = {
        role: "toolCall",
        callId: "c",
        name: "t",
        args: { deep: { n: 1 } },
        runId: "r",
      } as const;
      const input = structuredClone(body) as RecordBody;
      const [appended] = await store.append("A", [input], head);
      (input as { args: { deep: { n: number } } }).args.deep.n = 2;
      (appended as unknown as { args: { deep: { n: number } } }).args.deep.n = 3;
      const [read] = await store.read("A");
      (read as unknown as { args: { deep: { n: number } } }).args.deep.n = 4;
      const [windowed] = await store.readWindow("A");
      (windowed as unknown as { text: string }).text = "changed";
      expect(await store.read("A")).toEqual([expect.objectContaining(body)]);
      expect(await store.readWindow("A")).toEqual([expect.objectContaining(body)]);

      const state = { list: [1] };
      await store.saveState("A", state);
      state.list.push(2);
      const loaded = (await store.loadState("A")) as { list: number[] };
      loaded.list.push(3);
      expect(await store.loadState("A")).toEqual({ list: [1] });
    });

    it("after a restart returns the same records, head, window and state", async () => {
      if (!fixture.reopen) return;
      const head = await store.open("A");
      await store.append("A", [user("a"), final("b")], head);
      const next = await store.reset("A", head);
      const [stranded] = await store.append("A", [final("c")], next);
      await store.rotate("A", next);
      await store.append("A", [marker(stranded!.seq), user("d")], next);
      await store.open("B");
      await store.saveState("B", { resume: true });
      const before = {
        records: await store.read("A"),
        window: await store.readWindow("A"),
        head: await store.open("A"),
      };

      store = await fixture.reopen();
      expect(await store.sessions()).toEqual(["A", "B"]);
      expect(await store.read("A")).toEqual(before.records);
      expect(await store.readWindow("A")).toEqual(before.window);
      expect(texts(before.window)).toEqual(["c", "custom", "d"]);
      expect(await store.open("A")).toEqual(before.head);
      expect(await store.loadState("B")).toEqual({ resume: true });
      const [after] = await store.append("A", [user("e")], before.head);
      expect(after!.seq).toBe(6);
    });

    // Optional on the port: a store that has them keeps this contract.
    if (capabilities.commitments)
      describe("commitments", () => {
        const version = (id: string, status: CommitmentStatus, attempts = 0) =>
          commitmentRecord({ id, session: "A", status, attempts, reason: "asked which slot" });

        it("keeps the latest version of each commitment, in the order they were first stored", async () => {
          expect(await store.loadCommitments!()).toEqual([]);
          await store.saveCommitments!([version("c1", "pending"), version("c2", "pending")]);
          await store.saveCommitments!([version("c1", "pending", 1)]);
          await store.saveCommitments!([version("c1", "sent", 1), version("c3", "pending")]);
          expect(await store.loadCommitments!()).toEqual([
            version("c1", "sent", 1),
            version("c2", "pending"),
            version("c3", "pending"),
          ]);
        });

        it("returns copies: changing a loaded or saved object changes nothing stored", async () => {
          const saved = version("c1", "pending");
          await store.saveCommitments!([saved]);
          saved.status = "sent";
          const [loaded] = await store.loadCommitments!();
          loaded!.status = "expired";
          expect(await store.loadCommitments!()).toEqual([version("c1", "pending")]);
        });

        it("refuses a record without an id or that JSON cannot carry, and stores none of its call", async () => {
          await expect(store.saveCommitments!([version("", "pending")])).rejects.toThrow(/id/);
          await expect(
            store.saveCommitments!([version("ok", "pending"), { id: "c2", n: 1n } as never]),
          ).rejects.toThrow();
          expect(await store.loadCommitments!()).toEqual([]);
        });

        it("keeps commitments across a restart, whatever happened in between", async () => {
          if (!fixture.reopen) return;
          await store.saveCommitments!([version("c1", "pending"), version("c2", "pending")]);
          for (let attempt = 1; attempt <= 200; attempt++)
            await store.saveCommitments!([version("c1", "pending", attempt)]);
          await store.saveCommitments!([version("c2", "dismissed")]);
          store = await fixture.reopen();
          expect(await store.loadCommitments!()).toEqual([
            version("c1", "pending", 200),
            version("c2", "dismissed"),
          ]);
          await store.saveCommitments!([version("c3", "pending")]);
          store = await fixture.reopen();
          expect((await store.loadCommitments!()).map((record) => record.id)).toEqual(["c1", "c2", "c3"]);
        });
      });
    it("keeps schedule states by id: the last save wins, null deletes, a reopened store still has them", async () => {
      if (!store.saveSchedule || !store.loadSchedules) throw new Error("the store keeps no schedules");
      await store.saveSchedule("a", { nextRunAt: 1000, anchor: 0, spec: "s1" });
      await store.saveSchedule("b", { nextRunAt: 5000, anchor: 0, spec: "s2" });
      await store.saveSchedule("a", { nextRunAt: 2000, lastRunAt: 1000, anchor: 0, spec: "s1" });
      await store.saveSchedule("c", { nextRunAt: null, anchor: 0, spec: "s3" });
      await store.saveSchedule("b", null);
      const expected = {
        a: { nextRunAt: 2000, lastRunAt: 1000, anchor: 0, spec: "s1" },
        c: { nextRunAt: null, anchor: 0, spec: "s3" },
      };
      expect(await store.loadSchedules()).toEqual(expected);
      // Schedules are not sessions.
      expect(await store.sessions()).toEqual([]);
      if (!fixture.reopen) return;
      store = await fixture.reopen();
      expect(await store.loadSchedules!()).toEqual(expected);
    });
  });
}
