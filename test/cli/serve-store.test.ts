import { describe, expect, it } from "vitest";
import { openServeStore } from "../../src/cli/serve-store.js";
import { parseConfig } from "../../src/config.js";
import { useTempDir } from "../support/temp-dir.js";

describe("tiller serve's deliveries retention (web.keepDeliveries)", () => {
  const dir = useTempDir("tiller-serve-store");

  it("defaults to 1000 and refuses anything but a positive integer, naming the key", () => {
    expect(parseConfig({}).web.keepDeliveries).toBe(1000);
    expect(parseConfig({ web: { keepDeliveries: 50 } }).web.keepDeliveries).toBe(50);
    expect(() => parseConfig({ web: { keepDeliveries: 0 } })).toThrow(/config\.web\.keepDeliveries/);
  });

  it("reaches the web channel's log on the JSONL store", async () => {
    const opened = await openServeStore({
      storeDir: dir.path,
      postgresUrl: undefined,
      schema: undefined,
      capacity: {},
      keepDeliveries: 2,
    });
    for (const text of ["a", "b", "c", "d", "e"])
      await opened.deliveries.append("web:s", { kind: "reply", text });
    expect((await opened.deliveries.read("web:s")).map((r) => r.text)).toEqual(["d", "e"]);
    await opened.deliveries.close();
    await opened.store.close();
  });
});
