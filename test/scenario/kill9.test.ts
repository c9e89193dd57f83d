import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { nodeEntry } from "../support/node-entry.js";
import { mulberry32 } from "../support/random.js";

// A real kill -9 (docs/store.md; invariant 5 of docs/architecture.md): a gateway on a JSONL store with a system clock and a model
// that takes real time is killed with SIGKILL at a random moment after it acknowledged at least one
// message; then the `tiller` command resumes the store as a restarted process would. Every acknowledged
// message must be stored once and answered once, and the files must hold only whole lines.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DRIVER = join(ROOT, "test/scenario/kill9-driver.ts");
const CLI = join(ROOT, "src/cli.ts");
const SESSION = "web:kill9";
const MESSAGE_IDS = ["k1", "k2", "k3", "k4"];
const KILLS = 10;
const PARALLEL = 3;

const RESUME_SCENARIO = `
name: the restarted process only resumes
model:
  - reply: { delayMs: 100, text: "Resumed: {{latestUser}}" }
tools:
  lookup: { durationMs: 50, result: "found it" }
channels:
  web: {}
`;

let tmp: string;
let driverCommand: string[];
let cliCommand: string[];
const live = new Set<ReturnType<typeof spawn>>();

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-kill9-"));
  await writeFile(join(tmp, "resume.yaml"), RESUME_SCENARIO);
  [driverCommand, cliCommand] = await Promise.all([
    nodeEntry(DRIVER, join(tmp, "kill9-driver.mjs")),
    nodeEntry(CLI, join(tmp, "cli.mjs")),
  ]);
}, 30_000);

afterAll(async () => {
  for (const proc of live) proc.kill("SIGKILL");
  await rm(tmp, { recursive: true, force: true });
});

interface Killed {
  seed: number;
  acked: string[];
  driverLines: string[];
  driverStderr: string;
  driverSignal: NodeJS.Signals | null;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  files: Map<string, string>;
}

/** Starts the driver, kills it with SIGKILL `delayMs` after its first ack, then resumes with the CLI. */
async function killAndResume(seed: number, delayMs: number): Promise<Killed> {
  const dir = join(tmp, `store-${seed}`);
  const driver = spawn(process.execPath, [...driverCommand, dir, String(seed)], { cwd: ROOT });
  live.add(driver);
  const exited = new Promise<NodeJS.Signals | null>((done) =>
    driver.on("exit", (_code, signal) => {
      live.delete(driver);
      done(signal);
    }),
  );
  const lines: string[] = [];
  let stderr = "";
  let partial = "";
  const firstAck = new Promise<void>((done) => {
    driver.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      const split = (partial + chunk).split("\n");
      partial = split.pop() ?? ""; // a line the kill cut was never fully printed: not an ack
      lines.push(...split);
      if (lines.some((line) => line.includes('"ack"'))) done();
    });
  });
  driver.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  await Promise.race([firstAck, exited]);
  await new Promise((done) => setTimeout(done, delayMs));
  driver.kill("SIGKILL");
  const driverSignal = await exited; // the lock of a dead pid is taken over only once it is reaped
  const acked = lines.flatMap((line) => {
    const parsed = JSON.parse(line) as { ack?: string };
    return parsed.ack ? [parsed.ack] : [];
  });

  const cli = await run([...cliCommand, "run", join(tmp, "resume.yaml"), "--store", dir, "--json"]);
  const files = new Map<string, string>();
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.endsWith(".jsonl") || name.endsWith(".state.json"))
      files.set(name, await readFile(join(dir, name), "utf8"));
  }
  return {
    seed,
    acked,
    driverLines: lines,
    driverStderr: stderr,
    driverSignal,
    exitCode: cli.code,
    stdout: cli.stdout,
    stderr: cli.stderr,
    files,
  };
}

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, args, { cwd: ROOT });
    live.add(proc);
    let stdout = "";
    let stderr = "";
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    proc.on("error", fail);
    proc.on("close", (code) => {
      live.delete(proc);
      done({ code, stdout, stderr });
    });
  });
}

function check(killed: Killed): void {
  const context = [
    `seed ${killed.seed}, acked ${killed.acked.join(",")}`,
    killed.stderr + killed.driverStderr,
    // Enough to tell what happened from a failure report alone.
    `driver: ${killed.driverLines.join(" | ").slice(0, 2_000)}`,
    `resumed events: ${resumedEvents(killed.stdout)}`,
    ...[...killed.files].map(([name, text]) => `${name}:\n${text.slice(0, 4_000)}`),
  ].join("\n");
  expect(killed.driverStderr, context).toBe("");
  expect(killed.driverSignal, context).toBe("SIGKILL");
  expect(killed.acked.length, context).toBeGreaterThanOrEqual(1);
  expect(killed.exitCode, context).toBe(0);

  // No torn or unreadable line is left on disk, and nothing is pending after the resume.
  const transcripts = [...killed.files.keys()].filter((name) => name.endsWith(".jsonl"));
  expect(transcripts, context).toHaveLength(1);
  for (const name of transcripts) {
    const text = killed.files.get(name)!;
    expect(text.endsWith("\n"), context).toBe(true);
    for (const line of text.trimEnd().split("\n"))
      expect(() => JSON.parse(line), `${context}\n${line}`).not.toThrow();
  }
  expect(
    [...killed.files.keys()].filter((name) => name.endsWith(".state.json")),
    context,
  ).toEqual([]);

  const result = JSON.parse(killed.stdout) as ScenarioResult;
  expect(
    result.events.filter((event) => event.type === "session.crashed"),
    context,
  ).toEqual([]);
  const records = result.transcripts[SESSION] ?? [];
  expect(
    records.map((record) => record.seq),
    context,
  ).toEqual(records.map((_, index) => index + 1));

  // Each acknowledged message is stored exactly once; follow-ups keep their order.
  const users = records.flatMap((record) => (record.role === "user" ? [record.messageId] : []));
  expect(new Set(users).size, context).toBe(users.length);
  for (const id of killed.acked) expect(users, context).toContain(id);
  expect(users, context).toEqual(MESSAGE_IDS.slice(0, users.length));

  // Follow-up mode: one turn per message, so each user record is answered by exactly one final
  // before the next one, whichever process wrote it.
  const talk = records.filter((record) => record.role === "user" || record.role === "assistant");
  expect(
    talk.map((record) => record.role),
    context,
  ).toEqual(users.flatMap(() => ["user", "assistant"]));
  for (const final of talk.filter((record) => record.role === "assistant"))
    expect(final, context).toMatchObject({ delivered: true });

  // A tool call the kill cut off is closed with a result before anything else uses the history.
  for (const [index, record] of records.entries()) {
    if (record.role !== "toolCall") continue;
    const results = records.filter((other) => other.role === "toolResult" && other.callId === record.callId);
    expect(results, context).toHaveLength(1);
    expect(records.indexOf(results[0]!), context).toBeGreaterThan(index);
  }
}

function resumedEvents(stdout: string): string {
  try {
    const result = JSON.parse(stdout) as ScenarioResult;
    return result.events
      .map((event) => {
        const fields: Record<string, unknown> = Object.fromEntries(Object.entries(event));
        return [event.type, fields.status, fields.note, fields.reason].filter(Boolean).join(" ");
      })
      .join(" | ")
      .slice(0, 4_000);
  } catch {
    return `(no JSON result) ${stdout.slice(0, 500)}`;
  }
}

describe("kill -9 of a gateway on a JSONL store", () => {
  it("answers every acknowledged message exactly once after a SIGKILL at a random moment, ten times", async () => {
    const random = mulberry32(20_261_130);
    const plan = Array.from({ length: KILLS }, (_, index) => ({
      seed: index + 1,
      delayMs: Math.floor(random() * 1_400),
    }));
    const outcomes: Killed[] = [];
    const queue = [...plan];
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let next = queue.shift(); next; next = queue.shift())
          outcomes.push(await killAndResume(next.seed, next.delayMs));
      }),
    );
    expect(outcomes).toHaveLength(KILLS);
    if (process.env.TILLER_KILL9_LOG) {
      for (const killed of outcomes) {
        const result = JSON.parse(killed.stdout || "{}") as Partial<ScenarioResult>;
        const notes = (result.events ?? []).flatMap((event) =>
          event.type === "session.resumed" ? [event.note] : [],
        );
        console.log(`seed ${killed.seed}: acked ${killed.acked.join(",")}; resumed: ${notes.join(" | ")}`);
      }
    }
    for (const killed of outcomes.sort((a, b) => a.seed - b.seed)) check(killed);
    // The kills did cut work off: the restarted process had turns to resume.
    const resumed = outcomes.filter((killed) =>
      (JSON.parse(killed.stdout) as ScenarioResult).events.some((event) => event.type === "session.resumed"),
    );
    expect(resumed.length).toBeGreaterThan(0);
  }, 60_000);
});
