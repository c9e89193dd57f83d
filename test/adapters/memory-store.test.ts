import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { storeContract } from "./store-contract.js";

storeContract(
  "MemoryStore",
  async () => {
    const store = new MemoryStore();
    // The instance is the "disk": a restart closes it and keeps using it.
    const reopen = async () => {
      await store.close();
      return store;
    };
    return { store, reopen, cleanup: async () => {} };
  },
  { commitments: true },
);

describe("MemoryStore", () => {
  it("stamps records with the injected clock", async () => {
    let now = 1_000;
    const store = new MemoryStore({ now: () => now });
    const head = await store.open("A");
    const [first] = await store.append("A", [{ role: "user", text: "a", messageId: "m1" }], head);
    now = 2_000;
    const [second] = await store.append("A", [{ role: "user", text: "b", messageId: "m2" }], head);
    expect([first!.at, second!.at]).toEqual([1_000, 2_000]);
  });

  it("rejects a record body that JSON cannot carry, and writes nothing", async () => {
    const store = new MemoryStore();
    const head = await store.open("A");
    const bad = { role: "toolCall", callId: "c", name: "t", args: { n: 1n }, runId: "r" } as const;
    await expect(
      store.append("A", [{ role: "user", text: "ok", messageId: "m" }, bad], head),
    ).rejects.toMatchObject({
      code: "CONFIG_INVALID",
    });
    expect(await store.read("A")).toEqual([]);
  });
});
