import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { storeContract } from "../store-contract.js";

const db = usePostgresSchema("store");

// The contract expects an empty store per test: the suite's schema, emptied after each.
storeContract(
  "PostgresStore",
  async () => {
    let current = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 4 });
    return {
      store: current,
      reopen: async () => {
        await current.close();
        current = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 4 });
        return current;
      },
      cleanup: async () => {
        await current.close();
        await db.pool.query(
          `TRUNCATE ${db.schema}.transcript, ${db.schema}.sessions, ${db.schema}.session_state, ${db.schema}.commitments`,
        );
      },
    };
  },
  { commitments: true },
);

describe("PostgresStore", () => {
  it("keeps seq gap-free and refuses stale revisions under concurrent writers in two stores", async () => {
    const a = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 4 });
    const b = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 4 });
    try {
      const head = await a.open("shared");
      const write = (store: PostgresStore, tag: string) =>
        Promise.allSettled(
          Array.from({ length: 30 }, (_, i) =>
            store.append("shared", [{ role: "user", text: `${tag}${i}`, messageId: `${tag}${i}` }], head),
          ),
        );
      const [ra, rb] = await Promise.all([write(a, "a"), write(b, "b")]);
      expect([...ra, ...rb].every((r) => r.status === "fulfilled")).toBe(true);
      const next = await b.reset("shared", head);
      await expect(
        a.append("shared", [{ role: "user", text: "late", messageId: "late" }], head),
      ).rejects.toMatchObject({ code: "STALE_WRITER" });
      const records = await a.read("shared");
      expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(next).toEqual({ sessionId: head.sessionId, revision: 2, lastSeq: 60 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("names the field of a key PostgreSQL cannot hold", async () => {
    const store = await PostgresStore.connect({ url: db.url, schema: db.schema, poolSize: 1 });
    try {
      await expect(store.open("a\u0000b")).rejects.toMatchObject({
        code: "SESSION_KEY_INVALID",
        field: "session",
      });
    } finally {
      await store.close();
    }
  });

  it("refuses a schema name that is not a plain SQL name, naming the field", async () => {
    await expect(PostgresStore.connect({ url: db.url, schema: "x; DROP TABLE y" })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      field: "schema",
    });
  });
});
