import { appendFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WebChannel } from "../../src/adapters/channels/web-channel.js";
import { FileDeliveryLog } from "../../src/adapters/jsonl/file-delivery-log.js";
import { sessionFileName } from "../../src/ports/session-key.js";
import { useTempDir } from "../support/temp-dir.js";

describe("the web channel's deliveries log", () => {
  const dir = useTempDir("tiller-deliveries");

  it("keeps deliveries across a reopen, in order, with their receipts' ids", async () => {
    const first = new WebChannel(new FileDeliveryLog(dir.path));
    const a = await first.send({ session: "web:1", text: "one", kind: "reply", runId: "r1" });
    const b = await first.send({ session: "web:1", text: "two", kind: "notice" });
    await first.send({ session: "web:2", text: "elsewhere", kind: "reply" });
    expect(a.messageId).not.toBe(b.messageId);

    const reopened = new FileDeliveryLog(dir.path);
    const records = await reopened.read("web:1");
    expect(records.map((record) => [record.messageId, record.kind, record.text, record.runId])).toEqual([
      [a.messageId, "reply", "one", "r1"],
      [b.messageId, "notice", "two", undefined],
    ]);
    const c = await reopened.append("web:1", { kind: "reply", text: "three" });
    expect(c.messageId.startsWith("3-")).toBe(true);
  });

  it("cuts a torn last line (a crash mid-append) and appends after it on a line boundary", async () => {
    const log = new FileDeliveryLog(dir.path);
    await log.append("web:t", { kind: "reply", text: "kept" });
    const file = join(dir.path, "deliveries", `${sessionFileName("web:t")}.jsonl`);
    await appendFile(file, '{"messageId":"2-torn","kind":"reply","te');
    const reopened = new FileDeliveryLog(dir.path);
    expect((await reopened.read("web:t")).map((record) => record.text)).toEqual(["kept"]);
    await reopened.append("web:t", { kind: "reply", text: "after" });
    const again = new FileDeliveryLog(dir.path);
    expect((await again.read("web:t")).map((record) => record.text)).toEqual(["kept", "after"]);
    expect((await readFile(file, "utf8")).split("\n").filter(Boolean)).toHaveLength(2);
  });

  it("a send that repeats a deliveryId returns the stored receipt and stores nothing, across a reopen", async () => {
    const web = new WebChannel(new FileDeliveryLog(dir.path));
    const seen: string[] = [];
    web.subscribe("web:d", (record) => seen.push(record.messageId));
    const message = { session: "web:d", text: "once", kind: "reply" as const, deliveryId: "final:web:d:7" };
    const first = await web.send(message);
    const second = await web.send(message);
    expect(second).toEqual(first);
    const restarted = new WebChannel(new FileDeliveryLog(dir.path));
    expect(await restarted.send(message)).toEqual(first);
    expect(await restarted.log.read("web:d")).toHaveLength(1);
    expect(seen[0]).toBe(first.messageId);
  });
});
