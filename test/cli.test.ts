import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeEntry } from "./support/node-entry.js";

// User mistakes are exit 2 with one clear line on stderr, never a stack trace; a scenario that only
// resumes a store runs.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
let tmp: string;
let cli: string[];

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "tiller-cli-"));
  cli = await nodeEntry(join(ROOT, "src/cli.ts"), join(tmp, "cli.mjs"));
}, 30_000);
afterAll(() => rm(tmp, { recursive: true, force: true }));

function tiller(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const proc = spawn(process.execPath, [...cli, ...args], { cwd: tmp });
    let stdout = "";
    let stderr = "";
    proc.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    proc.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    proc.on("close", (code) => done({ code, stdout, stderr }));
  });
}

function oneLine(stderr: string): void {
  expect(stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(stderr).not.toMatch(/\n\s+at /);
}

describe("tiller run and user mistakes", () => {
  it("an empty scenario file is exit 2 with one line", async () => {
    await writeFile(join(tmp, "empty.yaml"), "\n");
    const result = await tiller("run", join(tmp, "empty.yaml"));
    expect(result.code).toBe(2);
    oneLine(result.stderr);
    expect(result.stderr).toMatch(/empty\.yaml: \(file\): expected a scenario .*empty file/);
  });

  it("a scenario with nothing to run and no store is exit 2 with one line", async () => {
    await writeFile(join(tmp, "nothing.yaml"), "name: nothing\n");
    const result = await tiller("run", join(tmp, "nothing.yaml"));
    expect(result.code).toBe(2);
    oneLine(result.stderr);
    expect(result.stderr).toContain("--store");
  });

  it("a --store that is a file is exit 2 with one line", async () => {
    await writeFile(
      join(tmp, "chat.yaml"),
      "channels: { web: {} }\ninbound:\n  - { at: 0, session: s, channel: web, id: m1, text: hi }\n",
    );
    await writeFile(join(tmp, "a-file"), "not a directory");
    const result = await tiller("run", join(tmp, "chat.yaml"), "--store", join(tmp, "a-file"));
    expect(result.code).toBe(2);
    oneLine(result.stderr);
    expect(result.stderr).toMatch(/--store .*a-file: expected a directory, found a file/);
  });

  it("a resume-only scenario (no inbound, no channels) resumes the store on its sessions' channels", async () => {
    const store = join(tmp, "store");
    await mkdir(store);
    await writeFile(
      join(tmp, "first.yaml"),
      "model:\n  - reply: { delayMs: 100, text: 'Re: {{latestUser}}' }\nchannels: { telegram: {} }\ninbound:\n  - { at: 0, session: 'telegram:1', channel: telegram, id: m1, text: hi }\n",
    );
    expect((await tiller("run", join(tmp, "first.yaml"), "--store", store, "--json")).code).toBe(0);
    await writeFile(join(tmp, "resume.yaml"), "name: resume only\n");
    const resumed = await tiller("run", join(tmp, "resume.yaml"), "--store", store, "--json");
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    const result = JSON.parse(resumed.stdout) as {
      transcripts: Record<string, unknown[]>;
      deliveries: unknown[];
    };
    expect(Object.keys(result.transcripts)).toEqual(["telegram:1"]);
    expect(result.deliveries).toEqual([]);
  });
});

describe("tiller --help", () => {
  it("lists each option once, --lease included", async () => {
    const result = await tiller("--help");
    expect(result.code).toBe(0);
    const described = result.stdout.split("\n").filter((line) => /^ {2}--\w/.test(line));
    const names = described.map((line) => line.trim().split(/\s+/)[0]);
    expect(names).toEqual([...new Set(names)]);
    expect(result.stdout).toMatch(/\[--lease MS\]/);
    expect(names).toContain("--lease");
  }, 30_000);
});
