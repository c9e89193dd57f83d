import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/adapters/postgres/postgres-store.js";
import { gatewayOn } from "../../support/gateway-on.js";
import { usePostgresSchema } from "../../support/postgres.js";

// Inbound dedupe across gateway processes on one database: an id one process accepted is acked
// `duplicate` by another (the store's dedupe_windows), and answered once.

const db = usePostgresSchema("dedupe");

async function processOn(processId: string) {
  const store = await PostgresStore.connect({ url: db.url, schema: db.schema, processId, poolSize: 3 });
  const proc = gatewayOn(store);
  await proc.gateway.start();
  return proc;
}

describe("message-id dedupe across gateways on one PostgreSQL", () => {
  it("acks as duplicate on one process what another accepted, both ways and when both receive it at once", async () => {
    const a = await processOn("pa");
    const b = await processOn("pb");
    // B already knows the session (it learned the stored ids at its first message): only the shared
    // window can tell it about ids A accepts afterwards.
    expect((await b.send("m0", "hello")).disposition).not.toBe("duplicate");
    await b.settle();
    expect((await a.send("m1", "book a room")).disposition).not.toBe("duplicate");
    expect(await b.send("m1", "book a room")).toMatchObject({ disposition: "duplicate" });
    expect((await b.send("m2", "for four")).disposition).not.toBe("duplicate");
    expect(await a.send("m2", "for four")).toMatchObject({ disposition: "duplicate" });
    const both = await Promise.all([a.send("m3", "at noon"), b.send("m3", "at noon")]);
    expect(both.map((ack) => ack.disposition === "duplicate").sort()).toEqual([false, true]);
    await Promise.all([a.settle(), b.settle()]);
    // Each id accepted by exactly one process, and run there (a turn of its own, or steered into one).
    const accepted = [...a.events, ...b.events].flatMap((event) =>
      event.type === "message.acked" && event.disposition !== "duplicate" ? [String(event.messageId)] : [],
    );
    expect(accepted.sort()).toEqual(["m0", "m1", "m2", "m3"]);
    const ran = [...a.events, ...b.events].flatMap((event) =>
      event.type === "turn.started"
        ? (event.messageIds as string[])
        : event.type === "steer.injected"
          ? (event.messageIds as string[])
          : [],
    );
    expect(ran.sort()).toEqual(["m0", "m1", "m2", "m3"]);
    await a.gateway.stop();
    await b.gateway.stop();
  });

  it("forgets an id once the dedupe window has passed, and one the session turned away", async () => {
    const store = await PostgresStore.connect({
      url: db.url,
      schema: db.schema,
      processId: "pc",
      poolSize: 2,
    });
    try {
      expect(await store.claimMessageId("web:9", "x1", 1000, 0)).toBe(true);
      expect(await store.claimMessageId("web:9", "x1", 2000, 0)).toBe(false);
      // Seen at 1000, the window now starts at 1500: new again.
      expect(await store.claimMessageId("web:9", "x1", 700_000, 1500)).toBe(true);
      expect(await store.claimMessageId("web:9", "x2", 700_000, 1500)).toBe(true);
      await store.releaseMessageId("web:9", "x2");
      expect(await store.claimMessageId("web:9", "x2", 700_001, 1500)).toBe(true);
      expect(await store.claimMessageId("web:10", "x1", 700_001, 1500)).toBe(true);
    } finally {
      await store.close();
    }
  });
});
