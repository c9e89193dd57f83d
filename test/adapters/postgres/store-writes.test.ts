import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import type { TranscriptHead, TranscriptRecord } from "../../../src/ports/store.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { countStatements } from "../../support/statement-count.js";

// Appends and state saves of different sessions made at once by one process go to the database in one
// statement (one round trip, one commit); a session whose head moved on or whose run lost its lease is
// refused alone.

const db = usePostgresSchema("writes");
const open: PostgresStore[] = [];

afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

async function connect(fenceFor: (session: string) => number | undefined = () => undefined) {
  const store = await PostgresStore.connect({ url: db.url, schema: db.schema, fences: { fenceFor } });
  open.push(store);
  return store;
}

const say = (text: string) => [{ role: "user" as const, text, messageId: text }];
const textOf = (record: TranscriptRecord) => ("text" in record ? record.text : undefined);

describe("appends of several sessions at once", () => {
  it("share one round trip, and each session's records land in order", async () => {
    const store = await connect();
    const sessions = ["web:a0", "web:a1", "web:a2", "web:a3", "web:a4"];
    const heads = await Promise.all(sessions.map((session) => store.open(session)));
    // Warm: each append below runs from the head this process knows.
    await Promise.all(sessions.map((session, i) => store.append(session, say(`${session} 1`), heads[i]!)));

    const { result, count: statements } = await countStatements(() =>
      Promise.all(
        sessions.map((session, i) =>
          Promise.all([
            store.append(session, say(`${session} 2`), heads[i]!),
            store.append(session, say(`${session} 3`), heads[i]!),
          ]),
        ),
      ),
    );
    // The second appends of each session wait for the first (one batch), then go together (another).
    expect(statements).toBe(2);
    expect(result.map((pair) => pair.map((records) => records[0]!.seq))).toEqual(sessions.map(() => [2, 3]));
    for (const session of sessions) {
      expect((await store.read(session)).map(textOf)).toEqual([1, 2, 3].map((n) => `${session} ${n}`));
    }
  });

  it("refuses only the session whose head moved on or whose run lost its lease", async () => {
    // web:lost's run holds a token the database never granted: its lease is gone.
    const store = await connect((session) => (session === "web:lost" ? 987_654_321 : undefined));
    const other = await connect();
    const sessions = ["web:ok0", "web:moved", "web:lost", "web:ok1"];
    const heads: TranscriptHead[] = [];
    for (const session of sessions) heads.push(await store.open(session));
    // Another process appends to web:moved: the head this one knows is stale.
    await other.append("web:moved", say("elsewhere"), heads[1]!);

    const appends = await Promise.allSettled(
      sessions.map((session, i) => store.append(session, say(`${session} here`), heads[i]!)),
    );
    expect(appends.map((a) => a.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect((appends[2] as PromiseRejectedResult).reason).toMatchObject({
      code: "LEASE_LOST",
      session: "web:lost",
    });
    // The stale head took the path that reads the head first: appended after the other process's record.
    expect((await store.read("web:moved")).map((r) => [r.seq, textOf(r)])).toEqual([
      [1, "elsewhere"],
      [2, "web:moved here"],
    ]);
    expect(await store.read("web:lost")).toEqual([]);
    for (const session of ["web:ok0", "web:ok1"])
      expect((await store.read(session)).map(textOf)).toEqual([`${session} here`]);
  });

  it("still refuses a stale writer of one session in a batch", async () => {
    const store = await connect();
    const [a, b] = [await store.open("web:s0"), await store.open("web:s1")];
    const next = await store.reset("web:s1", b);
    const appends = await Promise.allSettled([
      store.append("web:s0", say("fine"), a),
      store.append("web:s1", say("stale"), b),
      store.append("web:s1", say("current"), next),
    ]);
    expect(appends.map((x) => x.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((appends[1] as PromiseRejectedResult).reason).toMatchObject({ code: "STALE_WRITER" });
    expect((await store.read("web:s1")).map(textOf)).toEqual(["current"]);
  });
});

describe("saves and appends of several sessions at once", () => {
  it("share one round trip, and each lands", async () => {
    const store = await connect();
    const sessions = ["web:m0", "web:m1", "web:m2", "web:m3"];
    const heads = await Promise.all(sessions.map((session) => store.open(session)));
    await Promise.all(sessions.map((session, i) => store.append(session, say(`${session} 1`), heads[i]!)));

    const { count: statements } = await countStatements(() =>
      Promise.all(
        sessions.map((session, i) =>
          i % 2 === 0
            ? store.append(session, say(`${session} 2`), heads[i]!)
            : store.saveState(session, { turn: i }),
        ),
      ),
    );
    expect(statements).toBe(1);
    for (const [i, session] of sessions.entries()) {
      const texts = (await store.read(session)).map(textOf);
      if (i % 2 === 0) expect(texts).toEqual([`${session} 1`, `${session} 2`]);
      else {
        expect(texts).toEqual([`${session} 1`]);
        expect(await store.loadState(session)).toEqual({ turn: i });
      }
    }
  });

  it("refuses a save whose run lost its lease without refusing the appends beside it", async () => {
    const store = await connect((session) => (session === "web:gone" ? 987_654_321 : undefined));
    const heads = await Promise.all(["web:p0", "web:p1"].map((session) => store.open(session)));
    await Promise.all(heads.map((head, i) => store.append(`web:p${i}`, say(`p${i} 1`), head)));

    const writes = await Promise.allSettled([
      store.append("web:p0", say("p0 2"), heads[0]!),
      store.saveState("web:gone", { lost: true }),
      store.append("web:p1", say("p1 2"), heads[1]!),
      store.saveState("web:kept", { kept: true }),
    ]);
    expect(writes.map((w) => w.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((writes[1] as PromiseRejectedResult).reason).toMatchObject({
      code: "LEASE_LOST",
      session: "web:gone",
    });
    expect(await store.loadState("web:gone")).toBeNull();
    expect(await store.loadState("web:kept")).toEqual({ kept: true });
    expect((await store.read("web:p1")).map(textOf)).toEqual(["p1 1", "p1 2"]);
  });

  it("tries each write alone when the database refuses the batch, so only the bad one fails", async () => {
    const store = await connect();
    const heads = await Promise.all(["web:q0", "web:q1"].map((session) => store.open(session)));
    await Promise.all(heads.map((head, i) => store.append(`web:q${i}`, say(`q${i} 1`), head)));
    // A state holding a NUL character: PostgreSQL refuses it in text, and rolls the whole statement back.
    const writes = await Promise.allSettled([
      store.append("web:q0", say("q0 2"), heads[0]!),
      store.saveState("web:bad", { text: "\u0000" }),
      store.append("web:q1", say("q1 2"), heads[1]!),
    ]);
    expect(writes.map((w) => w.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((await store.read("web:q0")).map(textOf)).toEqual(["q0 1", "q0 2"]);
    expect((await store.read("web:q1")).map(textOf)).toEqual(["q1 1", "q1 2"]);
  });
});
