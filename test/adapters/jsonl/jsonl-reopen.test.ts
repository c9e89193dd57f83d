import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { sessionFileName } from "../../../src/ports/session-key.js";
import type { RecordBody, TranscriptRecord } from "../../../src/ports/store.js";
import { UNDELIVERED_FINAL } from "../../../src/ports/store.js";
import { useTempDir } from "../../support/temp-dir.js";

/** A store line as any writer of the format produces it, checksummed with zlib's CRC-32. */
function line(value: object): string {
  const json = JSON.stringify(value);
  if (typeof zlib.crc32 !== "function") throw new Error("needs zlib.crc32 (Node >= 20.15)");
  return `${json.slice(0, -1)},"crc":"${zlib.crc32(json).toString(16).padStart(8, "0")}"}\n`;
}

const user = (text: string): RecordBody => ({ role: "user", text, messageId: `m-${text}` });
/** About 400 bytes a line: 6000 records make a file of several read chunks. */
const long = (n: number): RecordBody =>
  user(`${n} ${"the deploy failed again, can you look at it? ".repeat(8)}`);

describe("JsonlStore reopening a transcript", () => {
  const temp = useTempDir("tiller-reopen");

  async function writeRecords(key: string, count: number, body: (n: number) => RecordBody) {
    const store = await JsonlStore.openDir({ dir: temp.path });
    const head = await store.open(key);
    for (let n = 0; n < count; n += 500) {
      const batch = Array.from({ length: Math.min(500, count - n) }, (_, i) => body(n + i));
      await store.append(key, batch, head);
    }
    const records = await store.read(key);
    await store.close();
    return { file: join(temp.path, `${sessionFileName(key)}.jsonl`), records };
  }

  it("opens a file written with zlib's checksums, in another writer's key order", async () => {
    const sessionId = "s-1";
    const at = 1_732_924_800_000;
    const record = (seq: number, revision: number, body: object) => ({
      id: `r${seq}`,
      seq,
      at: at + seq,
      sessionId,
      revision,
      ...body,
    });
    const ours = record(1, 1, { role: "user", text: "héllo 👋", messageId: "m1" });
    // Same fields, other order: a record the fixed-prefix reader does not recognize.
    const theirs = { role: "assistant", text: "hi", runId: "run", delivered: false, ...record(2, 1, {}) };
    const final = record(3, 2, { role: "assistant", text: "answer", runId: "run", delivered: false });
    const marker = record(4, 2, {
      role: "custom",
      customType: UNDELIVERED_FINAL,
      display: false,
      details: { deliveryMode: "automatic", delivered: false, finalSeq: 3, finalTextLength: 6 },
    });
    const after = record(5, 2, { role: "user", text: "next", messageId: "m5" });
    const file = join(temp.path, `${sessionFileName("A")}.jsonl`);
    await writeFile(
      file,
      [
        line({ type: "header", format: "tiller.transcript/1", sessionKey: "A", sessionId, createdAt: at }),
        line(ours),
        line(theirs),
        line({ type: "reset", revision: 2, at }),
        line(final),
        line({ type: "rotate", revision: 2, afterSeq: 3, at }),
        line(marker),
        line(after),
      ].join(""),
    );

    const store = await JsonlStore.openDir({ dir: temp.path });
    expect(await store.open("A")).toEqual({ sessionId, revision: 2, lastSeq: 5 });
    expect(await store.read("A")).toEqual([ours, theirs, final, marker, after]);
    // The rotation fell between the final and its marker: the window keeps them together.
    expect(await store.readWindow("A")).toEqual([final, marker, after]);
    const [next] = await store.append("A", [user("more")], { sessionId, revision: 2 });
    expect(next!.seq).toBe(6);
    await store.close();
  });

  it("reads back records with non-ASCII text after a restart, whole and after a rotation", async () => {
    const body = (n: number) => user(`${n}: ça marche 👍 — 東京 ${"é".repeat(n % 7)}`);
    const { records } = await writeRecords("A", 3000, body);
    // ASCII records under a non-ASCII session key (in the header line).
    const { records: plain } = await writeRecords("café ☕", 3000, (n) => user(`m${n}`));

    const store = await JsonlStore.openDir({ dir: temp.path });
    expect(await store.readWindow("café ☕")).toEqual(plain);
    expect(await store.readWindow("A")).toEqual(records);
    expect(await store.read("A")).toEqual(records);
    const head = await store.open("A");
    await store.rotate("A", head);
    const [tail] = await store.append("A", [body(3000)], head);
    await store.close();

    const again = await JsonlStore.openDir({ dir: temp.path });
    expect(await again.readWindow("A")).toEqual([tail]);
    expect(await again.read("A")).toEqual([...records, tail]);
    await again.close();
  });

  it("reads records of every size around the 32 KiB parse slices, across resets and rotations", async () => {
    // Sizes from a few bytes to four slices, so slices hold one record, many, or one record too large.
    const sizes = [3, 40_000, 10, 32_700, 32_800, 131_072, 500, 65_000, 1, 20_000];
    const body = (n: number) => user(`${n}:${"é😀x".repeat(sizes[n % sizes.length]! / 3)}`);
    const key = "A";
    const store = await JsonlStore.openDir({ dir: temp.path });
    let head = await store.open(key);
    for (let n = 0; n < 60; n += 6) {
      await store.append(
        key,
        Array.from({ length: 6 }, (_, i) => body(n + i)),
        head,
      );
      if (n === 24) head = await store.reset(key, head);
      if (n === 42) await store.rotate(key, head);
    }
    const all = await store.read(key);
    const window = await store.readWindow(key);
    await store.close();
    expect(all).toHaveLength(60);
    expect(window.map((record) => record.seq)).toEqual(all.slice(48).map((record) => record.seq));

    const again = await JsonlStore.openDir({ dir: temp.path });
    expect(await again.readWindow(key)).toEqual(window);
    expect(await again.read(key)).toEqual(all);
    await again.close();
  });

  it("finds undelivered-final markers anywhere in a file of several read chunks, even across chunk edges", async () => {
    const key = "A";
    const { file } = await writeRecords(key, 1500, long); // over 1 MiB, under 2
    const store = await JsonlStore.openDir({ dir: temp.path });
    let head = await store.open(key);
    const size = async () => (await stat(file)).size;
    // A final and its marker with a rotation between them, the marker line across the 2 MiB chunk edge.
    const pair = async (text: string, edge: number) => {
      const [final] = await store.append(
        key,
        [{ role: "assistant", text, runId: "r", delivered: false }],
        head,
      );
      head = await store.rotate(key, head);
      const before = await size();
      const pad = (text: string): RecordBody => ({ role: "user", text, messageId: "pad" });
      await store.append(key, [pad("x")], head);
      const probe = (await size()) - before; // the line length of a record with a 1-character text
      await store.append(key, [pad("x".repeat(Math.max(1, edge - 40 - (await size()) - probe + 1)))], head);
      const [marker] = await store.append(
        key,
        [
          {
            role: "custom",
            customType: UNDELIVERED_FINAL,
            display: false,
            details: {
              deliveryMode: "automatic",
              delivered: false,
              finalSeq: final!.seq,
              finalTextLength: text.length,
            },
          },
        ],
        head,
      );
      return {
        final: final!,
        marker: marker!,
        markerAt: (await size()) - JSON.stringify(marker).length - 18,
      };
    };
    const first = await pair("the first answer", 2 * 1024 * 1024);
    expect(first.markerAt).toBe(2 * 1024 * 1024 - 40);
    await store.append(
      key,
      Array.from({ length: 1000 }, (_, i) => long(i)),
      head,
    );
    const second = await pair("the second answer", 3 * 1024 * 1024);
    expect(second.markerAt).toBe(3 * 1024 * 1024 - 40);
    const window = await store.readWindow(key);
    await store.close();
    expect(window[0]).toEqual(second.final);
    expect(window.at(-1)).toEqual(second.marker);

    const again = await JsonlStore.openDir({ dir: temp.path });
    expect(await again.readWindow(key)).toEqual(window);
    await again.close();
  });

  it("returns fresh objects after a restart: changing what a read returned changes nothing", async () => {
    const { records } = await writeRecords("A", 50, (n) => user(`m${n}`));
    const store = await JsonlStore.openDir({ dir: temp.path });
    const window = await store.readWindow("A");
    for (const record of window) (record as { text: string }).text = "changed";
    (await store.read("A")).length = 0;
    expect(await store.readWindow("A")).toEqual(records);
    expect(await store.read("A")).toEqual(records);
    await store.close();
  });

  it("reports damage deep in a file of several read chunks, naming its line, and changes nothing", async () => {
    const { file } = await writeRecords("A", 6000, long);
    const bytes = await readFile(file);
    expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024);
    // Line 4001 holds seq 4000 (line 1 is the header); flip one byte of its text.
    const at = bytes.indexOf('"seq":4000,');
    const damaged = Buffer.from(bytes);
    damaged[damaged.indexOf("deploy", at)] = "D".charCodeAt(0);
    await writeFile(file, damaged);

    const store = await JsonlStore.openDir({ dir: temp.path });
    const error = await store.readWindow("A").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_CORRUPT" });
    expect((error as Error).message).toContain(`${file} line 4001:`);
    await store.close();
    expect((await readFile(file)).equals(damaged)).toBe(true);
    await expect(stat(`${file}.quarantine`)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("cuts a torn tail off a file of several read chunks and keeps every whole record", async () => {
    const { file, records } = await writeRecords("A", 6000, long);
    const bytes = await readFile(file);
    const torn = '{"id":"x","seq":6001,"at":7,"sessionId":"';
    await writeFile(file, Buffer.concat([bytes, Buffer.from(torn)]));

    const store = await JsonlStore.openDir({ dir: temp.path });
    const window: TranscriptRecord[] = await store.readWindow("A");
    expect(window).toEqual(records);
    await store.close();
    expect((await readFile(file)).equals(bytes)).toBe(true);
    expect(await readFile(`${file}.quarantine`, "utf8")).toContain(torn);
  });
});
