#!/usr/bin/env node
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { chat } from "./cli/chat.js";
import { COMMITMENTS_USAGE, commitmentsCommand } from "./cli/commitments.js";
import { reportStall } from "./cli/report-stall.js";
import { SCHEDULES_USAGE, schedulesCommand } from "./cli/schedules.js";
import { serve } from "./cli/serve.js";
import { loadToolsFile, UsageError as ServeUsageError } from "./cli/serve-setup.js";
import { ConfigError } from "./errors.js";
import type { ToolDefinition } from "./ports/tool.js";
import { loadScenario, ScenarioError } from "./scenario/load.js";
import { runScenario } from "./scenario/runner.js";
import { formatTimeline } from "./scenario/timeline.js";
import { PATHS_USAGE, pathsCommand, UsageError } from "./testing/paths-command.js";
import { watchedTools } from "./testing/watched-tools.js";

const USAGE = `usage: tiller run FILE|DIR [--json] [--store DIR] [--explain MESSAGE_ID] [--tools FILE.mjs]
       tiller serve [--host 127.0.0.1] [--port 8787] [--store DIR] [--config FILE] [--tools FILE.mjs]
                    [--model-url URL] [--model NAME] [--drain-timeout MS]
                    [--postgres URL] [--schema NAME] [--lease MS]
       tiller chat [--url http://127.0.0.1:8787] [--session KEY]
       ${SCHEDULES_USAGE.slice("usage: ".length)}
       ${PATHS_USAGE.slice("usage: ".length).split("\n")[0]}
       tiller --version | --help

  FILE     a scenario (.yaml, .yml or .json); DIR runs every scenario in it, in name order
  --json   print one JSON object per scenario (docs/scenarios.md) instead of a timeline
  --store  keep transcripts in the JSONL store at DIR (resuming what an earlier run left there)
  --postgres  (serve) several processes on one PostgreSQL (or TILLER_DATABASE_URL); --schema its tables
  --lease  (serve, with --postgres) how long runs and session ownerships hold without renewal (30000 ms)
  --explain  after the run, explain what happened to the message with this id
  --tools  your tools (a module whose default export is an array): their own execute runs in place of
           the scenario's stubs of the same name

A scenario's expect block is checked after it runs; a directory of such scenarios is a test suite and
ends with a summary line "N passed, N failed".

${COMMITMENTS_USAGE}

exit status: 0 ran, 3 an expectation failed, 2 invalid scenario or arguments, 1 internal error`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const io = { stdout: process.stdout, stderr: process.stderr, env: process.env };
  if (command === "--version") {
    const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
    process.stdout.write(`${pkg.version}\n`);
    return 0;
  }
  if (command === "commitments") {
    process.stdout.write(`${await commitmentsCommand(rest)}\n`);
    return 0;
  }
  if (command === "schedules") {
    process.stdout.write(`${await schedulesCommand(rest, process.env)}\n`);
    return 0;
  }
  // Both run until stopped; a stray timer or socket must not keep the process alive after that.
  if (command === "serve") process.exit(await serve(rest, io));
  if (command === "chat") process.exit(await chat(rest, { ...io, stdin: process.stdin }));
  if (command === "paths") {
    if (rest.includes("--help")) {
      process.stdout.write(`${PATHS_USAGE}\n`);
      return 0;
    }
    process.stdout.write(`${await pathsCommand(rest)}\n`);
    return 0;
  }
  if (command !== "run") {
    // Asked for, the usage is the output; after a mistake it is the error.
    const asked = command === "--help" || command === "-h";
    (asked ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return asked ? 0 : 2;
  }
  let target: string | undefined;
  let json = false;
  let storeDir: string | undefined;
  let explain: string | undefined;
  let toolsFile: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === "--json") json = true;
    else if (arg === "--tools") toolsFile = rest[++i];
    else if (arg === "--store") storeDir = rest[++i];
    else if (arg === "--explain") explain = rest[++i];
    else if (arg.startsWith("--")) {
      process.stderr.write(`unknown option ${arg}\n${USAGE}\n`);
      return 2;
    } else target = arg;
  }
  if (
    !target ||
    (rest.includes("--store") && !storeDir) ||
    (rest.includes("--explain") && !explain) ||
    (rest.includes("--tools") && !toolsFile)
  ) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (storeDir !== undefined) {
    const problem = await storeProblem(storeDir);
    if (problem) {
      process.stderr.write(`invalid argument: --store ${storeDir}: ${problem}\n`);
      return 2;
    }
  }
  // Your tools' own execute runs alongside the scenario's stub of the same name (which keeps the timing).
  const yours = await loadToolsFile(toolsFile);
  const toolProblems: string[] = [];
  const withYours = (stubs: ToolDefinition[]) => watchedTools(stubs, yours, toolProblems);
  const files = await scenarioFiles(target);
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    const scenario = await loadScenario(file);
    if (scenario.inbound.length === 0 && Object.keys(scenario.channels).length === 0 && !storeDir)
      throw new ScenarioError(
        file,
        "inbound",
        "expected at least one inbound message or channel (or --store DIR to resume a store), found none",
      );
    const { result, gateway } = await runScenario(scenario, {
      ...(storeDir ? { storeDir } : {}),
      ...(yours.length > 0 ? { tools: withYours } : {}),
    });
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else process.stdout.write(`${formatTimeline(result)}\n\n`);
    const problems = [...new Set(toolProblems.splice(0))];
    for (const problem of problems) process.stderr.write(`${file}: ${problem}\n`);
    if (result.expectations) {
      const misses = result.expectations.filter((expectation) => !expectation.ok);
      if (misses.length === 0 && problems.length === 0) passed++;
      else failed++;
      if (!json) process.stdout.write(`${formatExpectations(file, result.expectations)}\n\n`);
      else
        for (const miss of misses)
          process.stderr.write(`${file}: expected ${miss.what}; found ${miss.found}\n`);
    }
    if (explain) {
      const sessions = Object.keys(result.transcripts).concat(result.acks.map((ack) => ack.session));
      const found = [...new Set(sessions)].map((session) => gateway.explain(session, explain!)).find(Boolean);
      process.stdout.write(
        `${JSON.stringify(found ?? { messageId: explain, found: false }, null, json ? 0 : 2)}\n`,
      );
    }
  }
  if (passed + failed > 0) {
    const summary = `${passed} passed, ${failed} failed`;
    if (json) process.stderr.write(`${summary}\n`);
    else process.stdout.write(`${summary}\n`);
  }
  return failed > 0 ? 3 : 0;
}

function formatExpectations(
  file: string,
  expectations: ReadonlyArray<{ ok: boolean; what: string; found: string }>,
): string {
  const lines = expectations.map((expectation) =>
    expectation.ok
      ? `  ok    ${expectation.what}`
      : `  FAIL  ${expectation.what}\n        found: ${expectation.found}`,
  );
  return [`expectations of ${file}:`, ...lines].join("\n");
}

/** Why a --store path cannot be a store directory (absent is fine: it is created), or undefined. */
async function storeProblem(dir: string): Promise<string | undefined> {
  try {
    const info = await stat(dir);
    return info.isDirectory() ? undefined : "expected a directory, found a file";
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" ? undefined : `cannot be used (${code ?? String(error)})`;
  }
}

async function scenarioFiles(target: string): Promise<string[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(target);
  } catch {
    throw new ScenarioError(target, "(file)", "does not exist");
  }
  if (!info.isDirectory()) return [target];
  const names = (await readdir(target)).filter((name) => /\.(ya?ml|json)$/.test(name)).sort();
  return names.map((name) => join(target, name));
}

const work = main(process.argv.slice(2));
reportStall(work);
work.then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (
      error instanceof UsageError ||
      (error instanceof Error && "code" in error && error.code === "STORE_LOCKED")
    ) {
      process.stderr.write(`${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (error instanceof ScenarioError) {
      process.stderr.write(`invalid scenario: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (error instanceof UsageError || error instanceof ServeUsageError || error instanceof ConfigError) {
      process.stderr.write(`tiller: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(
      `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
