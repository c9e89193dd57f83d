import { appendFile, copyFile, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { decodeIndex, encodeIndex } from "../../../src/adapters/jsonl/transcript-index.js";
import { loadTranscript } from "../../../src/adapters/jsonl/transcript-load.js";
import { sessionFileName } from "../../../src/ports/session-key.js";
import type { RecordBody, TranscriptRecord } from "../../../src/ports/store.js";
import { UNDELIVERED_FINAL } from "../../../src/ports/store.js";
import { useTempDir } from "../../support/temp-dir.js";

const user = (n: number): RecordBody => ({
  role: "user",
  text: `${n} ${"the deploy failed again, can you look at it? ".repeat(8)}`,
  messageId: `m${n}`,
});
const final = (text: string): RecordBody => ({ role: "assistant", text, runId: "r", delivered: false });
const marker = (finalSeq: number): RecordBody => ({
  role: "custom",
  customType: UNDELIVERED_FINAL,
  display: false,
  details: { deliveryMode: "automatic", delivered: false, finalSeq, finalTextLength: 6 },
});

describe("the transcript index", () => {
  const temp = useTempDir("tiller-index");

  const fileOf = (key: string) => join(temp.path, `${sessionFileName(key)}.jsonl`);
  const indexOf = (key: string) => `${fileOf(key)}.index`;

  /** Appends `count` records in batches through a store, then closes it (which indexes a grown file). */
  async function write(key: string, count: number, body: (n: number) => RecordBody = user) {
    const store = await JsonlStore.openDir({ dir: temp.path });
    const head = await store.open(key);
    for (let n = 0; n < count; n += 500) {
      const batch = Array.from({ length: Math.min(500, count - n) }, (_, i) => body(n + i));
      await store.append(key, batch, head);
    }
    await store.close();
  }

  /** Everything a store opened on `temp.path` reads for `key`: all records, the window and the head. */
  async function readBack(key: string) {
    const store = await JsonlStore.openDir({ dir: temp.path });
    const head = await store.open(key);
    const result = { head, all: await store.read(key), window: await store.readWindow(key) };
    await store.close();
    return result;
  }

  /** The same, with no index on disk: a full scan, the reference. */
  async function readBackScanned(key: string) {
    await rm(indexOf(key), { force: true });
    return readBack(key);
  }

  it("is written when a store closes with a long transcript, and the next load scans no line", async () => {
    await write("A", 3000);
    const { size } = await stat(fileOf("A"));
    expect(size).toBeGreaterThan(1024 * 1024);
    expect(decodeIndex(await readFile(indexOf("A")), "A")).toMatchObject({ covered: size, lines: 3001 });
    const indexed = await loadTranscript(fileOf("A"), indexOf("A"), "A");
    expect(indexed!.scan.lines).toHaveLength(0);
    expect(indexed!.log!.records()).toHaveLength(3000);

    // Ten more records: closing indexes them too.
    const store = await JsonlStore.openDir({ dir: temp.path });
    const head = await store.open("A");
    await store.append(
      "A",
      Array.from({ length: 10 }, (_, i) => user(3000 + i)),
      head,
    );
    await store.close();
    const grown = (await stat(fileOf("A"))).size;
    expect(decodeIndex(await readFile(indexOf("A")), "A")).toMatchObject({ covered: grown, lines: 3011 });
    expect((await loadTranscript(fileOf("A"), indexOf("A"), "A"))!.scan.lines).toHaveLength(0);
    const viaIndex = await readBack("A");
    expect(viaIndex.all).toHaveLength(3010);
    expect(viaIndex).toEqual(await readBackScanned("A"));
  });

  it("keeps up while a transcript grows, so after a crash a load scans at most the last quarter", async () => {
    const store = await JsonlStore.openDir({ dir: temp.path });
    const head = await store.open("A");
    for (let n = 0; n < 6000; n += 250) {
      await store.append(
        "A",
        Array.from({ length: 250 }, (_, i) => user(n + i)),
        head,
      );
    }
    // Ten more: too few for a new index while appends go on.
    await store.append(
      "A",
      Array.from({ length: 10 }, (_, i) => user(6000 + i)),
      head,
    );
    // No close: what a kill -9 would leave on disk once the index writes in flight are done.
    while (store.isBusy()) await new Promise((resolve) => setImmediate(resolve));
    const { size } = await stat(fileOf("A"));
    const index = decodeIndex(await readFile(indexOf("A")), "A")!;
    expect(index.covered).toBeGreaterThanOrEqual(size * 0.75 - 1024 * 1024);
    expect(index.covered).toBeLessThan(size);
    const loaded = await loadTranscript(fileOf("A"), indexOf("A"), "A");
    const tail = loaded!.scan.lines.map((line) => line.line);
    expect(tail[0]).toBe(index.lines + 1);
    expect(tail.at(-1)).toBe(6011);
    expect(loaded!.log!.records()).toEqual(await store.read("A"));
    await store.close();
  });

  it("holds the record ranges as little-endian doubles after its header line", async () => {
    await write("A", 3000);
    const bytes = await readFile(indexOf("A"));
    const index = decodeIndex(bytes, "A")!;
    const ranges = bytes.subarray(bytes.indexOf(0x0a) + 1);
    expect(ranges.length).toBe(16 * 3000);
    for (const i of [0, 1, 1234, 2999]) {
      expect(ranges.readDoubleLE(16 * i)).toBe(index.starts[i]);
      expect(ranges.readDoubleLE(16 * i + 8)).toBe(index.ends[i]);
    }
    // In the file a range ends at the comma that opens the checksum tail (the brace's place once read).
    const text = (await readFile(fileOf("A"), "latin1")).slice(index.starts[1234], index.ends[1234]);
    expect(JSON.parse(`${text.slice(0, -1)}}`)).toMatchObject({ seq: 1235, messageId: "m1234" });
  });

  it("is written by a load that had to scan 1 MiB or more, and then used by the next load", async () => {
    await write("A", 3000);
    await rm(indexOf("A"));
    const scanned = await loadTranscript(fileOf("A"), indexOf("A"), "A");
    expect(scanned!.scan.lines).toHaveLength(3001);
    expect(scanned!.index).toBeDefined(); // what the store writes after this load
    const before = await readBack("A"); // this load writes it
    expect(decodeIndex(await readFile(indexOf("A")), "A")).toBeDefined();
    expect((await loadTranscript(fileOf("A"), indexOf("A"), "A"))!.scan.lines).toHaveLength(0);
    expect(await readBack("A")).toEqual(before);
  });

  it("keeps resets, rotations and final–marker pairs, inside the indexed bytes and after them", async () => {
    const key = "A";
    let store = await JsonlStore.openDir({ dir: temp.path });
    let head = await store.open(key);
    const phase = async (n: number) => {
      await store.append(
        key,
        Array.from({ length: 3000 }, (_, i) => user(n + i)),
        head,
      );
      const [answer] = await store.append(key, [final(`answer ${n}`)], head);
      head = await store.rotate(key, head); // the rotation falls between the final and its marker
      await store.append(key, [marker(answer!.seq), user(n + 3000)], head);
    };
    await phase(0);
    head = await store.reset(key, head);
    await phase(4000);
    await store.close(); // indexed here
    const indexed = decodeIndex(await readFile(indexOf(key)), key)!;
    expect(indexed.revision).toBe(2);
    expect(indexed.markers).toHaveLength(2);

    store = await JsonlStore.openDir({ dir: temp.path });
    head = await store.open(key);
    await phase(8000); // after the index: over 1 MiB more, so closing indexes again
    await store.close();
    const again = decodeIndex(await readFile(indexOf(key)), key)!;
    expect(again.covered).toBe((await stat(fileOf(key))).size);
    expect(again.markers).toHaveLength(3);
    const viaIndex = await readBack(key);
    expect(viaIndex.window.map((record) => record.role)).toEqual(["assistant", "custom", "user"]);
    expect(viaIndex.head).toMatchObject({ revision: 2 });
    expect(viaIndex).toEqual(await readBackScanned(key));
  });

  it("hides no damage: a byte changed under it makes the load scan every line and name the bad one", async () => {
    await write("A", 3000);
    const bytes = await readFile(fileOf("A"));
    const at = bytes.indexOf('"seq":2000,');
    const damaged = Buffer.from(bytes);
    damaged[damaged.indexOf("deploy", at)] = "D".charCodeAt(0);
    await writeFile(fileOf("A"), damaged);

    const store = await JsonlStore.openDir({ dir: temp.path });
    const error = await store.open("A").catch((e: unknown) => e);
    await store.close();
    expect(error).toMatchObject({ code: "STORE_CORRUPT" });
    expect((error as Error).message).toContain("line 2001:");
  });

  it("is ignored when torn, written for another key, left from another file, or pointing outside records", async () => {
    await write("A", 3000);
    await write("B", 3000);
    const reference = await readBack("A");
    const full = async () => (await loadTranscript(fileOf("A"), indexOf("A"), "A"))!.scan.lines.length;
    const good = await readFile(indexOf("A"));

    await truncate(indexOf("A"), good.length - 5); // torn
    expect(await full()).toBe(3001);
    await copyFile(indexOf("B"), indexOf("A")); // B's index under A's name
    expect(await full()).toBe(3001);

    // An index whose checksums hold but whose ranges are not records of the file.
    const index = decodeIndex(good, "A")!;
    const shifted = { ...index, starts: index.starts.map((start) => start + 1) };
    await writeFile(indexOf("A"), encodeIndex(shifted));
    expect(await full()).toBe(3001);
    const outside = { ...index, ends: index.ends.map((end, i) => (i === 5 ? index.covered + 10 : end)) };
    await writeFile(indexOf("A"), encodeIndex(outside));
    expect(await full()).toBe(3001);
    expect(await readBack("A")).toEqual(reference);

    // The transcript written again from scratch under the same name: same key, other bytes.
    await writeFile(indexOf("A"), good);
    await rm(fileOf("A"));
    await write("A", 2000);
    const rewritten = await readBack("A");
    expect(rewritten.all).toHaveLength(2000);
    expect(rewritten).toEqual(await readBackScanned("A"));
  });

  it("survives a torn tail after the indexed bytes: the tail is cut as without an index", async () => {
    await write("A", 3000);
    const torn = '{"id":"x","seq":3001,"at":7,"sessionId":"';
    const bytes = await readFile(fileOf("A"));
    await writeFile(fileOf("A"), Buffer.concat([bytes, Buffer.from(torn)]));
    const { all } = await readBack("A");
    expect(all.map((record: TranscriptRecord) => record.seq).at(-1)).toBe(3000);
    expect((await readFile(fileOf("A"))).equals(bytes)).toBe(true);
    expect(await readFile(`${fileOf("A")}.quarantine`, "utf8")).toContain(torn);
  });

  it("is written for the whole lines of a file loaded with a torn tail, and kept up after it", async () => {
    await write("A", 3000);
    await rm(indexOf("A"));
    const whole = await readFile(fileOf("A"));
    await writeFile(fileOf("A"), Buffer.concat([whole, Buffer.from('{"id":"x","seq":3001,"at"')]));

    const store = await JsonlStore.openDir({ dir: temp.path });
    const head = await store.open("A"); // scans every line, cuts the tail, indexes what is left
    await store.append(
      "A",
      Array.from({ length: 3000 }, (_, i) => user(3000 + i)),
      head,
    );
    await store.close();

    // The store followed the file past the cut: closing indexed it from memory, to its new end.
    const grown = await stat(fileOf("A"));
    expect(decodeIndex(await readFile(indexOf("A")), "A")).toMatchObject({
      covered: grown.size,
      lines: 6001,
    });
    const reloaded = await loadTranscript(fileOf("A"), indexOf("A"), "A");
    expect(reloaded!.scan.lines).toHaveLength(0);
    expect(await readBack("A")).toEqual(await readBackScanned("A"));
  });

  it("written after a torn tail, covers exactly the bytes left on disk", async () => {
    await write("A", 3000);
    await rm(indexOf("A"));
    const whole = await readFile(fileOf("A"));
    await writeFile(fileOf("A"), Buffer.concat([whole, Buffer.from('{"id":"x","seq":30')]));
    await readBack("A"); // cuts the tail; its load writes the index
    expect((await readFile(fileOf("A"))).equals(whole)).toBe(true);
    expect(decodeIndex(await readFile(indexOf("A")), "A")).toMatchObject({
      covered: whole.length,
      lines: 3001,
    });
    expect((await loadTranscript(fileOf("A"), indexOf("A"), "A"))!.scan.lines).toHaveLength(0);
  });
});

type Op =
  | { kind: "append"; count: number; size: number }
  | { kind: "final+marker" }
  | { kind: "reset" }
  | { kind: "rotate" }
  | { kind: "reopen" }
  | { kind: "crashTorn"; fragment: number }
  | { kind: "dropIndex" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("append" as const),
      count: fc.integer({ min: 1, max: 40 }),
      size: fc.integer({ min: 0, max: 30_000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "final+marker" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "reset" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "rotate" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "reopen" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "dropIndex" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("crashTorn" as const),
      fragment: fc.integer({ min: 1, max: 400 }),
    }),
  },
);

describe("the transcript index, whatever happens to the transcript", () => {
  const temp = useTempDir("tiller-index-property");

  it("loads exactly what the store holds at any moment, with the index as it is, stale, or gone", async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        const key = `p${++round}`;
        const file = join(temp.path, `${sessionFileName(key)}.jsonl`);
        let store = await JsonlStore.openDir({ dir: temp.path });
        let head = await store.open(key);
        let n = 0;
        const body = (size: number): RecordBody => ({
          role: "user",
          text: `${n++} ${"é".repeat(size)}`,
          messageId: `m${n}`,
        });
        try {
          for (const op of ops) {
            if (op.kind === "append")
              await store.append(
                key,
                Array.from({ length: op.count }, () => body(op.size)),
                head,
              );
            else if (op.kind === "final+marker") {
              const [answer] = await store.append(key, [final(`answer ${n}`)], head);
              await store.append(key, [marker(answer!.seq)], head);
            } else if (op.kind === "reset") head = await store.reset(key, head);
            else if (op.kind === "rotate") head = await store.rotate(key, head);
            else if (op.kind === "dropIndex") await rm(`${file}.index`, { force: true });
            else if (op.kind === "crashTorn") {
              // A crash mid-write: the next store cuts the half line and goes on from the whole ones.
              await store.close();
              const line = JSON.stringify({ id: "torn", seq: 1e9, text: "x".repeat(op.fragment) });
              await appendFile(file, line.slice(0, op.fragment));
              store = await JsonlStore.openDir({ dir: temp.path });
              head = await store.open(key);
            } else {
              await store.close();
              store = await JsonlStore.openDir({ dir: temp.path });
              head = await store.open(key);
            }
            // What a restart now would load (after a crash: the index as the store left it so far).
            while (store.isBusy()) await new Promise((resolve) => setImmediate(resolve));
            const loaded = (await loadTranscript(file, `${file}.index`, key))!;
            expect(loaded.log!.records()).toEqual(await store.read(key));
            expect(loaded.log!.window()).toEqual(await store.readWindow(key));
            expect(loaded.log!.head()).toEqual(await store.open(key));
          }
        } finally {
          await store.close();
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
