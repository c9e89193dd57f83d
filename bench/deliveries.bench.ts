/**
 * The `web` channel's delivery logs with retention on (`keep`) and off (`Infinity`): the cost of an
 * append to one long-lived session, what the session then holds, and for the file log the slowest
 * append (the one that waits for a compaction). PostgreSQL is measured when it answers
 * (TILLER_DATABASE_URL, else 127.0.0.1:5432/test). Run alone with `npx tsx bench/deliveries.bench.ts`.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileDeliveryLog } from "../src/adapters/jsonl/file-delivery-log.js";
import { PostgresDeliveryLog } from "../src/adapters/postgres/postgres-delivery-log.js";
import { type DeliveryLog, MemoryDeliveryLog } from "../src/ports/delivery-log.js";
import { sessionFileName } from "../src/ports/session-key.js";
import { benchDatabase, envNumber, type Figures, percentile, round } from "./bench-support.js";

const MEMORY_APPENDS = envNumber("TILLER_BENCH_DELIVERY_MEMORY", 200_000);
const FILE_APPENDS = envNumber("TILLER_BENCH_DELIVERY_FILE", 3000);
const PG_APPENDS = envNumber("TILLER_BENCH_DELIVERY_PG", 1000);
const KEEP = 500;
const TEXT =
  "Here is what I found in the deploy logs: the last build failed on a missing environment variable.";

/** Appends `count` deliveries to one session one after another; per-append µs, sorted. */
async function appendLoop(log: DeliveryLog, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await log.append("web:bench", { kind: "reply", text: TEXT, deliveryId: `reply:${i}` });
    times.push((performance.now() - start) * 1000);
  }
  return times.sort((a, b) => a - b);
}

const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

async function memory(): Promise<Figures> {
  const figures: Figures = {};
  for (const [label, keep] of [
    ["off", Number.POSITIVE_INFINITY],
    ["on", KEEP],
  ] as const) {
    const log = new MemoryDeliveryLog({ keep });
    const start = performance.now();
    for (let i = 0; i < MEMORY_APPENDS; i++)
      await log.append("web:bench", { kind: "reply", text: TEXT, deliveryId: `reply:${i}` });
    figures[`memory.retention_${label}.nsPerAppend`] = round(
      ((performance.now() - start) * 1e6) / MEMORY_APPENDS,
      0,
    );
    figures[`memory.retention_${label}.readable`] = (await log.read("web:bench")).length;
  }
  return figures;
}

async function file(): Promise<Figures> {
  const figures: Figures = {};
  for (const [label, keep] of [
    ["off", Number.POSITIVE_INFINITY],
    ["on", KEEP],
  ] as const) {
    const dir = await mkdtemp(join(tmpdir(), "tiller-bench-deliveries-"));
    try {
      const log = new FileDeliveryLog(dir, { keep });
      const times = await appendLoop(log, FILE_APPENDS);
      await log.close();
      const path = join(dir, "deliveries", `${sessionFileName("web:bench")}.jsonl`);
      const bytes = await readFile(path);
      figures[`file.retention_${label}.usPerAppend`] = round(mean(times), 0);
      figures[`file.retention_${label}.p99us`] = round(percentile(times, 99), 0);
      figures[`file.retention_${label}.maxUs`] = round(times.at(-1)!, 0);
      figures[`file.retention_${label}.fileLines`] = bytes.toString("utf8").split("\n").length - 1;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  return figures;
}

async function postgres(): Promise<Figures> {
  const database = await benchDatabase();
  if ("skipped" in database) return { "postgres.skipped": database.skipped };
  const { url, admin } = database;
  const figures: Figures = {};
  try {
    for (const [label, keep] of [
      ["off", Number.POSITIVE_INFINITY],
      ["on", KEEP],
    ] as const) {
      const schema = `bench_deliveries_${randomBytes(4).toString("hex")}`;
      try {
        const log = await PostgresDeliveryLog.connect({ url, schema, keep, pollMs: 60_000 });
        const times = await appendLoop(log, PG_APPENDS);
        await log.close();
        const { rows } = await admin.query<{ n: string }>(
          `SELECT count(*) AS n FROM ${schema}.web_deliveries`,
        );
        figures[`postgres.retention_${label}.usPerAppend`] = round(mean(times), 0);
        figures[`postgres.retention_${label}.p99us`] = round(percentile(times, 99), 0);
        figures[`postgres.retention_${label}.rows`] = Number(rows[0]!.n);
      } finally {
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      }
    }
  } finally {
    await admin.end();
  }
  return figures;
}

/**
 * Measures the delivery logs and returns the figures (also printed when this file runs alone).
 *
 * @example
 * ```ts
 * const figures = await benchDeliveries();
 * console.log(figures["file.retention_on.usPerAppend"]);
 * ```
 */
export async function benchDeliveries(): Promise<Figures> {
  return { keep: KEEP, ...(await memory()), ...(await file()), ...(await postgres()) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchDeliveries());
}
