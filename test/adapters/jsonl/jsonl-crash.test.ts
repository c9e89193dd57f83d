import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { appendFile, mkdtemp, open, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLine, scanLines } from "../../../src/adapters/jsonl/jsonl-file.js";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { nodeEntry } from "../../support/node-entry.js";
import { mulberry32 } from "../../support/random.js";

/**
 * A real crash harness: a writer process (crash-writer.ts) appends to one store directory and is killed
 * with SIGKILL at random points, 200 times; after each kill the directory is checked byte by byte, and
 * every 25 kills (and at the end) reopened through JsonlStore. TILLER_CRASH_KILLS=n changes the count,
 * TILLER_CRASH_KEEP=1 keeps the directory for inspection.
 */
const KILLS = Number(process.env.TILLER_CRASH_KILLS ?? 200);
const ROOT = resolve(import.meta.dirname, "../..");
const WRITER = resolve(import.meta.dirname, "crash-writer.ts");

let tmp: string;
let dir: string;
let command: string[];
const live = new Set<ChildProcessWithoutNullStreams>();

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-crash-"));
  dir = join(tmp, "store");
  command = await nodeEntry(WRITER, join(tmp, "crash-writer.mjs"));
});
afterAll(async () => {
  for (const proc of live) proc.kill("SIGKILL"); // writers left waiting if the test failed midway
  if (!process.env.TILLER_CRASH_KEEP) await rm(tmp, { recursive: true, force: true });
  else console.log("kept", tmp);
});

interface Writer {
  proc: ChildProcessWithoutNullStreams;
  acks: string[];
  /** messageId of an announced large record, until its ack arrives. */
  bigInFlight: string | undefined;
  ready: Promise<void>;
  exited: Promise<void>;
  stderr: string;
  onLine?: () => void;
}

function startWriter(seed: number): Writer {
  const proc = spawn(process.execPath, [...command, dir, String(seed), "--wait"], { cwd: ROOT });
  live.add(proc);
  let markReady!: () => void;
  const writer: Writer = {
    proc,
    acks: [],
    bigInFlight: undefined,
    ready: new Promise<void>((done) => {
      markReady = done;
    }),
    exited: new Promise<void>((done) =>
      proc.on("exit", () => {
        live.delete(proc);
        done();
      }),
    ),
    stderr: "",
  };
  let partial = "";
  proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? ""; // a line cut by the kill was never fully printed: not an ack
    for (const line of lines) {
      const [kind, a, b] = line.split(" ");
      if (kind === "ready") markReady();
      else if (kind === "ack" && a) {
        writer.acks.push(a);
        if (b === writer.bigInFlight) writer.bigInFlight = undefined;
      } else if (kind === "big") writer.bigInFlight = b;
    }
    writer.onLine?.();
  });
  proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    writer.stderr += chunk;
  });
  return writer;
}

const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Kills at a random point: during startup and repair, after some acks, or inside a large append. */
async function killAtRandomPoint(writer: Writer, random: () => number): Promise<void> {
  const roll = random();
  if (roll < 0.15) await pause(random() * 15);
  else {
    await Promise.race([writer.ready, writer.exited]);
    const target = writer.acks.length + 1 + Math.floor(random() * 40);
    await Promise.race([
      new Promise<void>((done) => {
        writer.onLine = () => {
          if (writer.bigInFlight || writer.acks.length >= target) done();
        };
      }).then(() => pause(random() * (writer.bigInFlight ? 8 : 3))),
      pause(60),
      writer.exited,
    ]);
  }
  writer.proc.kill("SIGKILL");
  await writer.exited;
}

describe("JsonlStore under SIGKILL", () => {
  it(`loses no acknowledged record across ${KILLS} kills of a writer process`, async () => {
    const random = mulberry32(2024);
    const acked = new Set<string>();
    const onDisk = new Set<string>();
    const checkedUpTo = new Map<string, number>();
    const tally = {
      kills: 0,
      acks: 0,
      killedInLargeAppend: 0,
      tornInjected: 0,
      repairs: 0,
      unreadableLines: 0,
      failedLoads: 0,
    };
    const started = performance.now();

    // Writers start two ahead: they load their modules while the current one runs, and wait for "go"
    // before touching the directory. A node start is most of a kill's cost.
    const warm = [startWriter(1), startWriter(2)];
    for (let kill = 1; kill <= KILLS; kill++) {
      const writer = warm.shift()!;
      writer.proc.stdin.write("go\n");
      if (kill + warm.length < KILLS) warm.push(startWriter(kill + warm.length + 1));
      await killAtRandomPoint(writer, random);
      expect(writer.proc.signalCode, writer.stderr).toBe("SIGKILL");
      tally.kills++;
      if (writer.bigInFlight) tally.killedInLargeAppend++;
      for (const id of writer.acks) acked.add(id);
      tally.acks += writer.acks.length;

      // Byte-level check of what the killed writer left, from where the last check stopped.
      for (const name of await readdir(dir)) {
        if (!name.endsWith(".jsonl")) continue;
        const file = join(dir, name);
        const from = checkedUpTo.get(file) ?? 0;
        const scan = scanLines(await readFrom(file, from));
        tally.unreadableLines += scan.corrupt.length;
        for (const line of scan.lines) {
          const id = parseLine(scan, line).id; // every whole line must also parse
          if (typeof id === "string") onDisk.add(id);
        }
        checkedUpTo.set(file, from + scan.validEnd);
      }
      const lost = [...acked].filter((id) => !onDisk.has(id));
      expect(lost, `after kill ${kill}`).toEqual([]);

      if (kill % 25 === 0 || kill === KILLS) tally.failedLoads += await reopenAndCheck(acked);
      // SIGKILL on Linux almost never tears a write(2) (page-cache copies are short), but power loss does:
      // now and then leave a torn line for the next writer to repair (and maybe be killed while repairing).
      else if (kill % 5 === 0) tally.tornInjected += await tearTail(random);
    }
    tally.repairs = await countRepairs();
    expect(tally.unreadableLines).toBe(0);
    expect(tally.repairs).toBeGreaterThanOrEqual(tally.tornInjected);
    expect(tally.failedLoads).toBe(0);
    expect(tally.acks).toBeGreaterThan(KILLS);
    console.log("crash harness", {
      ...tally,
      recordsOnDisk: onDisk.size,
      seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
    });
    // A deadline for a harness that stops making progress: 200 node starts took 121 s at load 20.
  }, 400_000);
});

/** Opens the directory as a store (taking over the dead writer's lock) and reads every transcript. */
async function reopenAndCheck(acked: Set<string>): Promise<number> {
  const store = await JsonlStore.openDir({ dir });
  let failed = 0;
  const ids = new Set<string>();
  try {
    for (const key of await store.sessions()) {
      try {
        const records = await store.read(key);
        expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
        for (const record of records) ids.add(record.id);
        await store.readWindow(key);
      } catch (error) {
        failed++;
        console.error(`transcript ${key} failed to load`, error);
      }
    }
  } finally {
    await store.close();
  }
  expect([...acked].filter((id) => !ids.has(id))).toEqual([]);
  return failed;
}

/** Appends a strict prefix of a transcript's last line (no newline), as a torn write would leave. */
async function tearTail(random: () => number): Promise<number> {
  const files = (await readdir(dir)).filter((name) => name.endsWith(".jsonl"));
  const name = files[Math.floor(random() * files.length)];
  if (!name) return 0;
  const bytes = await readFile(join(dir, name));
  const lastLine = bytes.subarray(bytes.lastIndexOf(0x0a, bytes.length - 2) + 1, bytes.length - 1);
  if (bytes.at(-1) !== 0x0a || lastLine.length < 2) return 0;
  await appendFile(join(dir, name), lastLine.subarray(0, 1 + Math.floor(random() * (lastLine.length - 1))));
  return 1;
}

/** Repairs done by every writer and check so far: one quarantine note per cut tail. */
async function countRepairs(): Promise<number> {
  let notes = 0;
  for (const name of await readdir(dir)) {
    if (!name.endsWith(".quarantine")) continue;
    notes += (await readFile(join(dir, name), "latin1")).split('{"type":"quarantine"').length - 1;
  }
  return notes;
}

async function readFrom(file: string, offset: number): Promise<Buffer> {
  const handle = await open(file, "r");
  try {
    const { size } = await handle.stat();
    const buf = Buffer.alloc(Math.max(0, size - offset));
    let read = 0;
    while (read < buf.length) {
      const { bytesRead } = await handle.read(buf, read, buf.length - read, offset + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return buf.subarray(0, read);
  } finally {
    await handle.close();
  }
}
