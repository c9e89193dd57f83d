/**
 * Commitment figures: the cost of a heartbeat tick that takes 100 due commitments with 1k, 10k and 100k
 * pending over 10,000 sessions (it must stay flat: the due index is a heap, a tick never scans), the
 * heap a pending commitment costs the gateway, the restart time to load 100k from a JSONL store, and on
 * PostgreSQL the refresh a shared-store tick starts with, 10k pending and nothing changed: the change
 * feed against a read of the whole table (uses TILLER_DATABASE_URL, else TILLER_TEST_DATABASE_URL, else
 * 127.0.0.1:5432/test; those figures are skipped with a line saying so when none answers).
 * Run alone with `npx tsx bench/commitments.bench.ts`.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ActorDeps } from "../src/actors/deps.js";
import { JsonlStore } from "../src/adapters/jsonl/jsonl-store.js";
import { MemoryStore } from "../src/adapters/memory-store.js";
import { PostgresStore } from "../src/adapters/postgres/postgres-store.js";
import { SimulatedClock } from "../src/adapters/simulated-clock.js";
import { CommitmentBook } from "../src/gateway/commitments/commitment-book.js";
import { CommitmentHeartbeat } from "../src/gateway/commitments/commitment-heartbeat.js";
import { silentLogger } from "../src/logger.js";
import { commitmentMachine } from "../src/machines/commitment.machine.js";
import type { Commitment } from "../src/machines/commitment.types.js";
import type { StoredCommitment, TranscriptStore } from "../src/ports/store.js";
import { benchDatabase, ensureGc, type Figures, median, round } from "./bench-support.js";

const SESSIONS = 10_000;
const DUE = 100;
const HOUR = 3_600_000;

function commitment(n: number, dueAt: number): Commitment {
  return {
    id: `c_${n.toString(36).padStart(8, "0")}`,
    session: `telegram:${n % SESSIONS}`,
    kind: "open_loop",
    source: "tool",
    reason: `Asked the user to confirm the list for project ${n} before going on with the review.`,
    suggestedText: `Checking back on project ${n}: should I keep the list as it was?`,
    dedupeKey: `project-${n}:confirm-list`,
    confidence: 0.86,
    dueWindow: { earliestAt: dueAt, latestAt: dueAt + 12 * HOUR },
    sourceMessageId: `m${n}`,
    sourceRunId: `telegram:${n % SESSIONS}#${n}`,
    createdAt: 0,
    updatedAt: 0,
    status: "pending",
    dueAt,
    attempts: 0,
    expiresAt: dueAt + 84 * HOUR,
  };
}

/** `pending` commitments, the first `DUE` due at 1 h, the rest spread over the next 30 days. */
function population(pending: number): StoredCommitment[] {
  return Array.from(
    { length: pending },
    (_, n) =>
      commitment(
        n,
        n < DUE ? HOUR : 2 * HOUR + ((n * 7919) % (30 * 24)) * HOUR,
      ) as unknown as StoredCommitment,
  );
}

/**
 * A real heartbeat over a real book and index; its lane never grants, so a tick's cost is what it does
 * itself: take the due ones (quota and route checks included), make their actors, ask for their lanes.
 */
async function tickMicros(pending: number): Promise<number> {
  const clock = new SimulatedClock(HOUR);
  const store = new MemoryStore();
  await store.saveCommitments(population(pending));
  const book = new CommitmentBook(store);
  await book.load();
  const deps = {
    clock,
    logger: silentLogger,
    emit() {},
    channelFor: () => ({ name: "telegram", channel: { send: async () => ({}) } }),
    lanes: { run: () => new Promise<never>(() => {}) },
  } as unknown as ActorDeps;
  const heartbeat = new CommitmentHeartbeat(deps, book, commitmentMachine, {
    everyMs: HOUR,
    maxPerTick: DUE,
    maxPerDay: 3,
  });
  const samples: number[] = [];
  for (let round = 0; round < 60; round++) {
    const started = performance.now();
    const taken = heartbeat.tick();
    samples.push((performance.now() - started) * 1000);
    if (taken.length !== DUE) throw new Error(`a tick took ${taken.length} of ${DUE} due`);
    // Put them back as they were, for the next round.
    for (const id of taken) {
      heartbeat.actors.get(id)?.stop();
      heartbeat.actors.delete(id);
      book.index.schedule(id, HOUR);
    }
  }
  return median(samples.slice(10));
}

async function heapPerPending(pending: number): Promise<number> {
  const gc = ensureGc();
  const store = new MemoryStore();
  await store.saveCommitments(population(pending));
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const book = new CommitmentBook(store);
  await book.load();
  gc?.();
  const after = process.memoryUsage().heapUsed;
  if (book.index.size !== pending) throw new Error("not all loaded");
  return (after - before) / pending;
}

async function restartMs(pending: number): Promise<{ ms: number; fileMb: number }> {
  const dir = await mkdtemp(join(tmpdir(), "tiller-bench-commitments-"));
  try {
    const writer = await JsonlStore.openDir({ dir });
    const all = population(pending);
    for (let i = 0; i < all.length; i += 10_000) await writer.saveCommitments(all.slice(i, i + 10_000));
    await writer.close();
    const samples: number[] = [];
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      const store = await JsonlStore.openDir({ dir });
      const book = new CommitmentBook(store);
      await book.load();
      samples.push(performance.now() - started);
      if (book.index.size !== pending) throw new Error("not all loaded");
      await store.close();
    }
    const { statSync } = await import("node:fs");
    return { ms: median(samples), fileMb: statSync(join(dir, "commitments.log")).size / 1e6 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * One tick's refresh on a shared PostgreSQL store with `pending` commitments and nothing written since
 * the last: the change feed (`loadCommitmentChanges`) against the whole-table read a store without it
 * gets (`loadCommitments`, compared record by record with memory), median of 30 each.
 */
async function refreshFigures(pending: number): Promise<Figures> {
  const database = await benchDatabase();
  if ("skipped" in database) {
    console.log(`commitments refresh bench skipped: ${database.skipped}`);
    return { "refresh.pg": `skipped: ${database.skipped}` };
  }
  const { url, admin } = database;
  const schema = `bench_commitments_${randomBytes(4).toString("hex")}`;
  const store = await PostgresStore.connect({ url, schema, poolSize: 2 });
  try {
    const all = population(pending);
    for (let i = 0; i < all.length; i += 1_000) await store.saveCommitments(all.slice(i, i + 1_000));
    const incremental = new CommitmentBook(store);
    await incremental.load();
    // The same store seen through the port's older methods only: every refresh reads the whole table.
    const whole = { loadCommitments: () => store.loadCommitments() } as unknown as TranscriptStore;
    const full = new CommitmentBook(whole);
    await full.load();
    const time = async (book: CommitmentBook, rows: number) => {
      const samples: number[] = [];
      for (let round = 0; round < 35; round++) {
        const started = performance.now();
        const read = await book.refresh();
        samples.push((performance.now() - started) * 1000);
        if (read !== rows) throw new Error(`a refresh read ${read} rows, not ${rows}`);
      }
      return median(samples.slice(5));
    };
    const changes = await time(incremental, 0);
    const everything = await time(full, pending);
    return {
      "refresh.nothingChanged.at10k.us": round(changes, 0),
      "refresh.fullRead.at10k.us": round(everything, 0),
      "refresh.ratio.fullToChanges": round(everything / changes, 1),
    };
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

/**
 * Measures the commitments and returns the figures.
 *
 * @example
 * ```ts
 * const figures = await benchCommitments();
 * console.log(figures["tick.100due.at100k.us"]);
 * ```
 */
export async function benchCommitments(): Promise<Figures> {
  await tickMicros(1_000); // warm-up: the first ticks compile the machine and the heap code
  const at1k = await tickMicros(1_000);
  const at10k = await tickMicros(10_000);
  const at100k = await tickMicros(100_000);
  const heap = await heapPerPending(100_000);
  const restart = await restartMs(100_000);
  const refresh = await refreshFigures(10_000);
  return {
    "tick.100due.at1k.us": round(at1k, 0),
    "tick.100due.at10k.us": round(at10k, 0),
    "tick.100due.at100k.us": round(at100k, 0),
    "tick.ratio.100kTo1k": round(at100k / at1k),
    "tick.ratio.100kTo1k.target": "< 2",
    "heap.perPending.bytes": round(heap, 0),
    "heap.perPending.bytes.target": "< 1024",
    "restart.load100k.ms": round(restart.ms, 0),
    "restart.load100k.fileMB": round(restart.fileMb, 1),
    ...refresh,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchCommitments());
