import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FileDeliveryLog } from "../../src/adapters/jsonl/file-delivery-log.js";
import { encodeLine } from "../../src/adapters/jsonl/jsonl-file.js";
import { deliverySeq } from "../../src/ports/delivery-log.js";
import { sessionFileName } from "../../src/ports/session-key.js";
import { nodeEntry } from "../support/node-entry.js";
import { mulberry32 } from "../support/random.js";
import { useTempDir } from "../support/temp-dir.js";

const fileOf = (dir: string, session: string) => join(dir, "deliveries", `${sessionFileName(session)}.jsonl`);
const linesOf = async (file: string) => (await readFile(file, "utf8")).split("\n").filter(Boolean);

describe("the file deliveries log's compaction", () => {
  const dir = useTempDir("tiller-delivery-retention");

  it("rewrites the file to the newest `keep` once it holds 2 × keep, so it never grows past that", async () => {
    const log = new FileDeliveryLog(dir.path, { keep: 3 });
    const file = fileOf(dir.path, "web:c");
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push((await log.append("web:c", { kind: "reply", text: `m${i}` })).messageId);
      expect((await linesOf(file)).length).toBeLessThanOrEqual(6);
    }
    await log.close();
    const lines = await linesOf(file);
    expect(lines.length).toBeLessThanOrEqual(6);
    expect(lines.at(-1)).toContain(ids[19]);
    const reopened = new FileDeliveryLog(dir.path, { keep: 3 });
    expect((await reopened.read("web:c")).map((r) => r.messageId)).toEqual(ids.slice(-3));
  });

  it("a temp file left by a compaction cut off before its rename is ignored, removed and rewritten", async () => {
    const first = new FileDeliveryLog(dir.path, { keep: 3 });
    const file = fileOf(dir.path, "web:t");
    const records = [];
    for (let i = 0; i < 5; i++) records.push(await first.append("web:t", { kind: "reply", text: `m${i}` }));
    await first.close();
    // Killed while writing the temp file (a torn line), or after its fsync but before the rename.
    for (const leftover of [
      '{"messageId":"3-torn","kind":"re',
      records
        .slice(-3)
        .map((r) => encodeLine(JSON.stringify(r)))
        .join(""),
    ]) {
      await writeFile(`${file}.tmp`, leftover);
      const reopened = new FileDeliveryLog(dir.path, { keep: 3 });
      expect(await reopened.read("web:t")).toEqual(records.slice(-3));
      expect(existsSync(`${file}.tmp`)).toBe(false);
      await reopened.close();
    }
    const last = new FileDeliveryLog(dir.path, { keep: 3 });
    records.push(await last.append("web:t", { kind: "reply", text: "m5" }));
    await last.close();
    expect(await linesOf(file)).toHaveLength(3);
    expect(await new FileDeliveryLog(dir.path, { keep: 3 }).read("web:t")).toEqual(records.slice(-3));
  });

  it("a file written with a larger keep is read as its newest `keep` and compacted after the next append", async () => {
    const wide = new FileDeliveryLog(dir.path, { keep: 100 });
    for (let i = 0; i < 10; i++) await wide.append("web:w", { kind: "reply", text: `m${i}` });
    await wide.close();
    const narrow = new FileDeliveryLog(dir.path, { keep: 2 });
    expect((await narrow.read("web:w")).map((r) => r.text)).toEqual(["m8", "m9"]);
    const next = await narrow.append("web:w", { kind: "reply", text: "m10" });
    expect(next.messageId.startsWith("11-")).toBe(true);
    await narrow.close();
    expect(await linesOf(fileOf(dir.path, "web:w"))).toHaveLength(2);
  });
});

/**
 * A real crash test: a writer process (delivery-crash-writer.ts) appends with `keep` 2, so it compacts
 * every other append, and is killed with SIGKILL at random points; after each kill the log is reopened
 * and must hold every acknowledged delivery among the newest `keep`, with its id, and nothing out of
 * order. TILLER_DELIVERY_KILLS=n changes the count.
 */
describe("the file deliveries log under kill -9", () => {
  const KILLS = Number(process.env.TILLER_DELIVERY_KILLS ?? 30);
  const KEEP = 2;
  const dir = useTempDir("tiller-delivery-crash");
  const live = new Set<ChildProcessWithoutNullStreams>();
  afterAll(() => {
    for (const proc of live) proc.kill("SIGKILL");
  });

  it(`keeps every acknowledged kept delivery through ${KILLS} kills, mid-append and mid-compaction`, {
    timeout: 120_000,
  }, async () => {
    const command = await nodeEntry(
      resolve(import.meta.dirname, "delivery-crash-writer.ts"),
      join(dir.path, "delivery-crash-writer.mjs"),
    );
    const random = mulberry32(7);
    const acked: string[] = [];
    const file = fileOf(dir.path, "web:crash");
    for (let kill = 0; kill < KILLS; kill++) {
      const proc = spawn(process.execPath, [...command, dir.path, String(KEEP)]);
      live.add(proc);
      const exited = new Promise<void>((done) => proc.on("exit", () => done()));
      const target = acked.length + 1 + Math.floor(random() * 8);
      let partial = "";
      let stderr = "";
      proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
      });
      await new Promise<void>((done) => {
        proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          const lines = (partial + chunk).split("\n");
          partial = lines.pop() ?? ""; // a line cut by the kill was never fully printed: not an ack
          for (const line of lines) if (line.startsWith("ack ")) acked.push(line.slice(4));
          if (acked.length >= target) done();
        });
        void exited.then(() => done());
      });
      // Right after an ack a compaction may be starting: kill there or a little later.
      setTimeout(() => proc.kill("SIGKILL"), Math.floor(random() * 4));
      await exited;
      live.delete(proc);
      expect(stderr).toBe("");
      expect((await linesOf(file)).length).toBeLessThanOrEqual(2 * KEEP + 1);

      const log = new FileDeliveryLog(dir.path, { keep: KEEP });
      const kept = await log.read("web:crash");
      await log.close();
      const seqs = kept.map((record) => deliverySeq(record.messageId));
      const last = deliverySeq(acked.at(-1)!);
      // The last one may have been written but not acknowledged before the kill.
      expect([last, last + 1]).toContain(seqs.at(-1));
      expect(seqs).toEqual(
        Array.from({ length: Math.min(KEEP, seqs.at(-1)!) }, (_, i) => seqs.at(-1)! - seqs.length + 1 + i),
      );
      for (const id of acked.filter((id) => deliverySeq(id) > seqs.at(-1)! - KEEP))
        expect(kept.map((record) => record.messageId)).toContain(id);
    }
  });
});
