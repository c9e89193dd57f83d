import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { nodeEntry } from "../support/node-entry.js";
import { mulberry32 } from "../support/random.js";
import { batchOf } from "./gateway-kill9-plan.js";

// kill -9 of the whole gateway: 100 sessions in every queue mode, tools that can and cannot be
// cancelled, real processes killed at random moments and restarted on the same JSONL store. Counted
// across all processes: every acknowledged message answered exactly once, no reply sent twice, no
// transcript unreadable, no marker or recovery duplicated. TILLER_GATEWAY_KILLS sets the kill count
// (the long run uses 200).

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const KILLS = Number(process.env.TILLER_GATEWAY_KILLS ?? 8);
const SEED = Number(process.env.TILLER_GATEWAY_SEED ?? 16);
let tmp: string;
let driver: string[];
const live = new Set<ReturnType<typeof spawn>>();

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-gateway-kill9-"));
  driver = await nodeEntry(join(ROOT, "test/scenario/gateway-kill9-driver.ts"), join(tmp, "driver.mjs"));
}, 30_000);
afterAll(async () => {
  for (const proc of live) proc.kill("SIGKILL");
  await rm(tmp, { recursive: true, force: true });
});

interface Incarnation {
  lines: Array<{ ack?: string; session?: string; disposition?: string; idle?: boolean; started?: boolean }>;
  stderr: string;
  signal: NodeJS.Signals | null;
}

/**
 * Runs one gateway process; kills it with SIGKILL `killAfterMs` after it started serving (or lets it
 * reach idle).
 */
function incarnation(args: string[], killAfterMs?: number): Promise<Incarnation> {
  return new Promise((done) => {
    const proc = spawn(process.execPath, [...driver, ...args], { cwd: ROOT });
    live.add(proc);
    const lines: Incarnation["lines"] = [];
    let partial = "";
    let stderr = "";
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      const split = (partial + chunk).split("\n");
      partial = split.pop() ?? "";
      for (const line of split) {
        const parsed = JSON.parse(line) as Incarnation["lines"][number];
        lines.push(parsed);
        if (parsed.started && killAfterMs !== undefined) {
          clearTimeout(timer);
          timer = setTimeout(() => proc.kill("SIGKILL"), killAfterMs);
        }
      }
    });
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    let timer = setTimeout(() => proc.kill("SIGKILL"), 90_000);
    proc.on("exit", (_code, signal) => {
      clearTimeout(timer);
      live.delete(proc);
      done({ lines, stderr, signal });
    });
  });
}

describe("kill -9 of the whole gateway", () => {
  it(
    `answers every acknowledged message exactly once across ${KILLS} kills of 100 sessions`,
    async () => {
      const dir = join(tmp, "store");
      const ackedFile = join(tmp, "acked.json");
      const deliveriesFile = join(tmp, "deliveries.jsonl");
      const args = [dir, String(SEED), ackedFile, deliveriesFile];
      const random = mulberry32(SEED);
      const acked = new Map<string, number>(); // id → the process whose batch it belongs to
      const planned = new Map<string, string>(); // id → mode
      let killed = 0;
      let k = 0;
      // Each process gets a batch of its own and is killed 0–700 ms after it serves; a process that
      // finished first (no kill landed) does not count. On a loaded machine a kill can land before a
      // process acked anything: more processes then run, until more messages than kills were acked.
      for (; (killed < KILLS || acked.size <= KILLS) && k < KILLS * 10; k++) {
        for (const message of batchOf(SEED, k)) planned.set(message.id, message.mode);
        const run = await incarnation([...args, String(k)], Math.floor(random() * 700));
        expect(run.stderr).toBe("");
        if (run.signal === "SIGKILL") killed++;
        for (const line of run.lines)
          if (line.ack && line.disposition !== "rejected" && !acked.has(line.ack))
            acked.set(line.ack, Number(/^p(\d+)/.exec(line.ack)?.[1]));
        await writeFile(ackedFile, JSON.stringify(Object.fromEntries(acked)));
      }
      const last = await incarnation([...args, "-1"]);
      expect(last.stderr).toBe("");
      expect(last.lines.at(-1)).toEqual({ idle: true });
      const modeOf = planned;
      expect(acked.size).toBeGreaterThan(KILLS);

      // Deliveries, counted across every process.
      const sends = (await readFile(deliveriesFile, "utf8"))
        .split("\n")
        .filter((line) => line.endsWith("}"))
        .map(
          (line) =>
            JSON.parse(line) as {
              deliveryId: string;
              kind: string;
              text: string;
              duplicate?: boolean;
              session: string;
            },
        );
      const perDelivery = new Map<string, number>();
      const answers = new Map<string, number>();
      for (const sent of sends) {
        if (sent.duplicate) continue;
        perDelivery.set(sent.deliveryId, (perDelivery.get(sent.deliveryId) ?? 0) + 1);
        if (sent.kind !== "reply" && sent.kind !== "recovery") continue;
        for (const id of /\[(.*)\]/.exec(sent.text)?.[1]?.split(",") ?? [])
          answers.set(id, (answers.get(id) ?? 0) + 1);
      }
      expect([...perDelivery].filter(([, count]) => count > 1)).toEqual([]);
      const twice = [...answers].filter(([, count]) => count > 1);
      expect(twice).toEqual([]);
      // Interrupted turns are answered by the interrupting message's turn; every other mode answers each.
      const unanswered = [...acked.keys()].filter((id) => modeOf.get(id) !== "interrupt" && !answers.has(id));
      expect(unanswered).toEqual([]);

      // Every transcript reads whole; each acked message is stored once; no marker or recovery twice.
      for (const name of await readdir(dir)) {
        if (!name.endsWith(".jsonl")) continue;
        for (const line of (await readFile(join(dir, name), "utf8")).trimEnd().split("\n"))
          expect(() => JSON.parse(line), `${name}: ${line}`).not.toThrow();
      }
      expect((await readdir(dir)).filter((name) => name.endsWith(".state.json"))).toEqual([]);
      const store = await JsonlStore.openDir({ dir });
      try {
        for (const session of await store.sessions()) {
          const records = await store.read(session);
          const users = records.flatMap((record) => (record.role === "user" ? [record.messageId] : []));
          expect(new Set(users).size, session).toBe(users.length);
          const markers = records.flatMap((record) =>
            record.role === "custom" && record.customType === "tiller.undelivered-final"
              ? [record.details.finalSeq]
              : [],
          );
          expect(new Set(markers).size, session).toBe(markers.length);
          const recovered = records.flatMap((record) =>
            record.role === "custom" && record.customType === "tiller.recovered"
              ? [record.details.strandedRunId]
              : [],
          );
          expect(new Set(recovered).size, session).toBe(recovered.length);
        }
        for (const id of acked.keys()) expect(planned.has(id), id).toBe(true);
      } finally {
        await store.close();
      }
      const dropped = sends.filter((sent) => sent.duplicate).length;
      console.log(
        `gateway kill -9: ${killed} kills over ${k + 1} processes, ${acked.size} messages acked, ${sends.length - dropped} deliveries, ` +
          `${dropped} resends dropped as duplicates by the channel, 0 answered twice`,
      );
    },
    120_000 + KILLS * 8_000,
  );
});
