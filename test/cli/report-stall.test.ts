import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// A command whose work waits forever (a lost wake-up) empties the event loop: the process must end
// with status 1 and say so, not with status 0 and no output.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function runSnippet(code: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
      cwd: ROOT,
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", fail);
    child.on("close", (exit) => done({ code: exit, stderr }));
  });
}

describe("reportStall", () => {
  it("ends a process whose work can never finish with status 1 and a line on stderr", async () => {
    const stalled = await runSnippet(
      'import { reportStall } from "./src/cli/report-stall.ts"; reportStall(new Promise(() => {}));',
    );
    expect(stalled.code).toBe(1);
    expect(stalled.stderr).toContain("internal error: the command stopped with work still waiting");
  }, 30_000);

  it("leaves a process whose work finished alone", async () => {
    const finished = await runSnippet(
      'import { reportStall } from "./src/cli/report-stall.ts"; reportStall(new Promise((done) => setTimeout(done, 10)));',
    );
    expect(finished).toEqual({ code: 0, stderr: "" });
  }, 30_000);
});
