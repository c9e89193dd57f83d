import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll } from "vitest";
import { nodeEntry } from "./node-entry.js";
import type { SseRecorder } from "./sse-recorder.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The `tiller` command as node arguments, bundled once into `dir`. */
export function tillerCommand(dir: string): Promise<string[]> {
  return nodeEntry(join(ROOT, "src/cli.ts"), join(dir, "tiller-cli.mjs"));
}

/**
 * The life of a suite of real `tiller` processes: a temp dir with the command bundled into it, every
 * process tracked and SIGKILLed at the end, SSE recorders closed after each test.
 */
export function useServeProcesses(prefix: string) {
  let dir = "";
  let command: string[] = [];
  const live = new Set<Running>();
  const recorders: SseRecorder[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
    command = await tillerCommand(dir);
  }, 60_000);
  afterEach(() => {
    for (const recorder of recorders.splice(0)) recorder.close();
  });
  afterAll(async () => {
    for (const running of live) running.proc.kill("SIGKILL");
    // Gone before the suite's other hooks run (a schema dropped under a live process deadlocks).
    await Promise.all([...live].map((running) => running.exited));
    await rm(dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      return dir;
    },
    get command() {
      return command;
    },
    live,
    record(recorder: SseRecorder): SseRecorder {
      recorders.push(recorder);
      return recorder;
    },
  };
}

export interface Running {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `tiller ARGS...` with its output kept. */
export function runTiller(command: string[], args: string[], env: NodeJS.ProcessEnv = {}): Running {
  const proc = spawn(process.execPath, [...command, ...args], {
    env: { ...process.env, TILLER_LOG_LEVEL: "error", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout!.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  proc.stderr!.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    proc.on("exit", (code, signal) => done({ code, signal })),
  );
  return { proc, stdout: () => out, stderr: () => err, exited };
}

/** Resolves once `read()` matches `pattern` (polling the child's output), with the match. */
export async function waitForOutput(
  running: Running,
  read: () => string,
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = read().match(pattern);
    if (match) return match;
    if (running.proc.exitCode !== null || Date.now() > deadline)
      throw new Error(
        `no ${pattern} in the output (exit ${running.proc.exitCode}):\n${running.stdout()}\n${running.stderr()}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts `tiller serve --port 0 ...` and waits for the address it prints. */
export async function startServe(command: string[], args: string[], env: NodeJS.ProcessEnv = {}) {
  const running = runTiller(command, ["serve", "--port", "0", ...args], env);
  const [, url] = await waitForOutput(running, running.stdout, /listening on (http:\/\/\S+)/);
  return { ...running, url: url! };
}
