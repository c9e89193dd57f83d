import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { assertSessionKey, sessionFileName } from "../../../src/ports/session-key.js";
import type { RecordBody, TranscriptRecord } from "../../../src/ports/store.js";
import { mulberry32 } from "../../support/random.js";
import { storeContract } from "../store-contract.js";

const user = (text: string): RecordBody => ({ role: "user", text, messageId: `m-${text}` });

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "tiller-jsonl-"));
}

storeContract(
  "JsonlStore",
  async () => {
    const dir = await tempDir();
    let current = await JsonlStore.openDir({ dir });
    return {
      store: current,
      reopen: async () => {
        await current.close();
        current = await JsonlStore.openDir({ dir });
        return current;
      },
      cleanup: async () => {
        await current.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  { commitments: true },
);

/** Writes a few records (and a reset and a rotation), closes, and returns the file and what it holds. */
async function writeSample(
  dir: string,
  key: string,
): Promise<{ file: string; bytes: Buffer; records: TranscriptRecord[] }> {
  const store = await JsonlStore.openDir({ dir, now: () => 7 });
  const head = await store.open(key);
  for (const text of ["a", "bb", "ccc"]) await store.append(key, [user(text)], head);
  const next = await store.reset(key, head);
  await store.append(key, [user("d")], next);
  await store.rotate(key, next);
  await store.append(key, [user("e")], next);
  const records = await store.read(key);
  await store.close();
  const file = join(dir, `${sessionFileName(key)}.jsonl`);
  return { file, bytes: await readFile(file), records };
}

describe("JsonlStore files", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps hostile session keys inside the store directory, each in its own file", async () => {
    const keys = [
      "../../x",
      "/etc/passwd",
      "..",
      ".",
      "CON",
      "NUL",
      "con",
      "nul.txt",
      "COM1",
      'a/b\\c:d*e?f"g<h>i|j',
      "x".repeat(300),
      "line\nbreak",
      "carriage\rreturn",
      "nul\0byte",
      "Telegram:1",
      "telegram:1",
      "caf\u00e9",
      "cafe\u0301",
      " ",
      "-rf",
      "~",
      "$HOME",
      "%2e%2e%2f",
      "..\\..\\x",
      "\u202etxt.exe",
      "😀",
      ".lock",
      "x.jsonl",
    ];
    const storeDir = join(dir, "store");
    const names = keys.map(sessionFileName);
    expect(new Set(names).size).toBe(keys.length);
    for (const name of names) {
      expect(name).toMatch(/^[a-z0-9][a-z0-9_-]{0,39}-[0-9a-f]{32}$|^s-[0-9a-f]{32}$/);
      expect(dirname(resolve(storeDir, `${name}.jsonl`))).toBe(storeDir);
    }

    const store = await JsonlStore.openDir({ dir: storeDir });
    for (const key of keys) {
      const head = await store.open(key);
      await store.append(key, [user(key)], head);
      await store.saveState(key, { key });
    }
    await store.close();
    // Nothing was created beside the store directory, and nothing below it but flat files.
    expect(await readdir(dir)).toEqual(["store"]);
    const files = await readdir(storeDir, { withFileTypes: true });
    expect(files.every((f) => f.isFile())).toBe(true);
    expect(files.filter((f) => f.name.endsWith(".jsonl"))).toHaveLength(keys.length);

    const reopened = await JsonlStore.openDir({ dir: storeDir });
    expect(await reopened.sessions()).toEqual([...keys].sort());
    for (const key of keys) {
      expect((await reopened.read(key)).map((r) => ("text" in r ? r.text : ""))).toEqual([key]);
      expect(await reopened.loadState(key)).toEqual({ key });
    }
    await reopened.close();
  });

  it("names 100k random keys without a collision or a path outside the directory", () => {
    const storeDir = resolve(dir, "store");
    const keys = new Set<string>();
    const random = mulberry32(42);
    while (keys.size < 100_000) {
      const key = randomKey(random);
      keys.add(key);
      // Near-twins: case and normalization variants must land in different files too.
      if (random() < 0.1)
        for (const twin of [key.toUpperCase(), key.normalize("NFD"), key.normalize("NFC")]) keys.add(twin);
    }
    const names = new Set<string>();
    let outside = 0;
    for (const key of keys) {
      assertSessionKey(key);
      const name = sessionFileName(key);
      names.add(name);
      if (dirname(resolve(storeDir, `${name}.state.json`)) !== storeDir) outside++;
    }
    expect(outside).toBe(0);
    expect(names.size).toBe(keys.size);
  }, 20_000);

  it("rejects empty keys and lone surrogates with SESSION_KEY_INVALID", () => {
    expect(() => assertSessionKey("")).toThrow(expect.objectContaining({ code: "SESSION_KEY_INVALID" }));
    expect(() => assertSessionKey("a\udc00")).toThrow(
      expect.objectContaining({ code: "SESSION_KEY_INVALID" }),
    );
    expect(() => assertSessionKey(42)).toThrow(expect.objectContaining({ code: "SESSION_KEY_INVALID" }));
  });

  it("cuts a torn last line on open and keeps the cut bytes in a quarantine file", async () => {
    const { file, bytes, records } = await writeSample(dir, "A");
    const torn = '{"id":"x","seq":8,"at":7,"sess';
    await writeFile(file, Buffer.concat([bytes, Buffer.from(torn)]));

    const store = await JsonlStore.openDir({ dir });
    expect(await store.read("A")).toEqual(records);
    expect(await readFile(file)).toEqual(bytes);
    const quarantine = await readFile(`${file}.quarantine`, "utf8");
    expect(quarantine).toContain(torn);
    expect(quarantine).toContain(`"offset":${bytes.length}`);
    const head = await store.open("A");
    await store.append("A", [user("after")], head);
    await store.close();

    const again = await JsonlStore.openDir({ dir });
    expect((await again.read("A")).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    await again.close();
  });

  it("cuts a whole last line whose checksum does not match", async () => {
    const { file, bytes, records } = await writeSample(dir, "A");
    const lines = bytes.toString("utf8").split("\n");
    const last = lines.at(-2)!;
    const forged = `${lines.slice(0, -2).join("\n")}\n${last.replace('"e"', '"E"')}\n`;
    await writeFile(file, forged);

    const store = await JsonlStore.openDir({ dir });
    expect(await store.read("A")).toEqual(records.slice(0, -1));
    expect(await readFile(`${file}.quarantine`, "utf8")).toContain('"E"');
    await store.close();
  });

  it("after a cut at every byte offset keeps exactly the whole lines, and never throws", async () => {
    const { bytes, records } = await writeSample(dir, "A");
    // Offsets just past each "\n". Line 0 is the header, then 3 records, a reset, a record, a rotation, a record.
    const ends: number[] = [];
    for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x0a) ends.push(i + 1);
    const lineOfSeq = [1, 2, 3, 5, 7];

    const check = async (laneDir: string, cut: number) => {
      const file = join(laneDir, `${sessionFileName("A")}.jsonl`);
      await rm(`${file}.quarantine`, { force: true });
      await writeFile(file, bytes.subarray(0, cut));
      const whole = ends.filter((end) => end <= cut).length;
      const validEnd = whole > 0 ? ends[whole - 1]! : 0;
      const expected = records.filter((r) => lineOfSeq[r.seq - 1]! < whole);

      const store = await JsonlStore.openDir({ dir: laneDir });
      expect(await store.read("A")).toEqual(expected);
      expect(await store.sessions()).toEqual(whole > 0 ? ["A"] : []);
      if (cut > validEnd) {
        expect((await readFile(`${file}.quarantine`)).includes(bytes.subarray(validEnd, cut))).toBe(true);
      }
      if (cut % 20 === 0) {
        // The repaired file takes further appends cleanly.
        await store.append("A", [user("more")], await store.open("A"));
        await store.close();
        const again = await JsonlStore.openDir({ dir: laneDir });
        const seqs = (await again.read("A")).map((r) => r.seq);
        expect(seqs).toEqual([...expected.map((r) => r.seq), expected.length + 1]);
        await again.close();
      } else {
        await store.close();
        expect((await stat(file).catch(() => undefined))?.size).toBe(whole > 0 ? validEnd : undefined);
      }
    };

    // Four lanes over separate directories overlap their fsyncs.
    const lanes = 4;
    let checked = 0;
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        const laneDir = join(dir, `lane-${lane}`);
        await mkdir(laneDir);
        for (let cut = lane; cut <= bytes.length; cut += lanes) {
          await check(laneDir, cut);
          checked++;
        }
      }),
    );
    expect(checked).toBe(bytes.length + 1);
  }, 60_000);

  it("reports a corrupt middle line as STORE_CORRUPT naming the file and line, and changes nothing", async () => {
    const { file, bytes } = await writeSample(dir, "A");
    const text = bytes.toString("utf8");
    const damaged = text.replace('"text":"bb"', '"text":"bB"');
    await writeFile(file, damaged);

    const store = await JsonlStore.openDir({ dir });
    const error = await store.read("A").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_CORRUPT" });
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain("line 3");
    await expect(store.open("A")).rejects.toMatchObject({ code: "STORE_CORRUPT" });
    await store.close();
    expect(await readFile(file, "utf8")).toBe(damaged);
    await expect(stat(`${file}.quarantine`)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses a transcript whose header names another session key", async () => {
    const { bytes } = await writeSample(dir, "A");
    await writeFile(join(dir, `${sessionFileName("B")}.jsonl`), bytes);
    const store = await JsonlStore.openDir({ dir });
    await expect(store.read("B")).rejects.toMatchObject({ code: "STORE_CORRUPT" });
    await expect(store.sessions()).rejects.toMatchObject({ code: "STORE_CORRUPT" });
    await store.close();
  });

  it("shares one fsync per touched file among appends that arrive together", async () => {
    const store = await JsonlStore.openDir({ dir });
    const keys = Array.from({ length: 20 }, (_, i) => `s${i}`);
    const heads = await Promise.all(keys.map((key) => store.open(key)));
    const before = store.stats();
    await Promise.all(
      keys.flatMap((key, i) => [1, 2, 3].map((n) => store.append(key, [user(`${n}`)], heads[i]!))),
    );
    const after = store.stats();
    expect(after.records - before.records).toBe(60);
    expect(after.fsyncs - before.fsyncs).toBe(20);
    await new Promise((resolve) => setImmediate(resolve)); // the batch's own bookkeeping is microtasks
    expect(store.isBusy()).toBe(false);
    await store.close();
  });

  it("batches appends issued across event-loop turns within groupCommitMs", async () => {
    const store = await JsonlStore.openDir({ dir, groupCommitMs: 250 });
    const head = await store.open("A");
    const before = store.stats().fsyncs;
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      appends.push(store.append("A", [user(`${i}`)], head));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(store.isBusy()).toBe(true);
    await Promise.all(appends);
    expect(store.stats().fsyncs - before).toBe(1);
    expect((await store.read("A")).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    await store.close();
  });

  it("writes state atomically under the safe name, with the key inside", async () => {
    const store = await JsonlStore.openDir({ dir });
    await store.saveState("../evil", { a: 1 });
    const file = join(dir, `${sessionFileName("../evil")}.state.json`);
    expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({
      sessionKey: "../evil",
      state: { a: 1 },
    });
    await writeFile(`${file}.tmp`, "half a wri"); // a crash between write and rename
    await store.close();

    const again = await JsonlStore.openDir({ dir });
    expect(await again.sessions()).toEqual(["../evil"]);
    expect(await again.loadState("../evil")).toEqual({ a: 1 });
    await again.saveState("../evil", null);
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });
    await again.close();
  });

  it("rejects calls after close", async () => {
    const store = await JsonlStore.openDir({ dir });
    await store.close();
    await expect(store.open("A")).rejects.toMatchObject({ code: "CONFIG_INVALID" });
  });
});

const HOSTILE = [
  ".",
  "..",
  "/",
  "\\",
  ":",
  "\0",
  "\n",
  "\r",
  " ",
  "*",
  "?",
  '"',
  "<",
  ">",
  "|",
  "~",
  "-",
  "_",
  "%",
];
const ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/** A seeded key: path syntax, mixed-case ASCII, any BMP character, emoji and combining marks. */
function randomKey(random: () => number): string {
  const length = random() < 0.95 ? 1 + Math.floor(random() * 40) : 41 + Math.floor(random() * 260);
  let key = "";
  for (let i = 0; i < length; i++) {
    const roll = random();
    if (roll < 0.35) key += HOSTILE[Math.floor(random() * HOSTILE.length)];
    else if (roll < 0.75) key += ALNUM[Math.floor(random() * ALNUM.length)];
    else if (roll < 0.9) {
      const code = 0xa0 + Math.floor(random() * (0xfffd - 0xa0));
      key += String.fromCharCode(code >= 0xd800 && code <= 0xdfff ? code - 0x800 : code);
    } else key += random() < 0.5 ? String.fromCodePoint(0x1f600 + Math.floor(random() * 80)) : "e\u0301";
  }
  return key;
}
