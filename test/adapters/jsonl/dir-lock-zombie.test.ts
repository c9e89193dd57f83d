import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DirLock, isAlive } from "../../../src/adapters/jsonl/dir-lock.js";
import { useTempDir } from "../../support/temp-dir.js";

// A process tree killed with SIGKILL can leave the gateway a zombie until its parent reaps it: it holds
// no file and writes nothing, so its lock is stale at once.

const children: Array<ReturnType<typeof spawn>> = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

describe("the store lock and zombies", () => {
  const tmp = useTempDir("tiller-zombie");
  it("counts a zombie as dead and a running process as alive (from /proc/PID/stat)", () => {
    expect(isAlive(process.pid)).toBe(true);
    expect(isAlive(process.pid, () => `${process.pid} (node (x)) Z 1 1 1`)).toBe(false);
    expect(isAlive(process.pid, () => `${process.pid} (node) S 1 1 1`)).toBe(true);
    expect(isAlive(process.pid, () => undefined)).toBe(true);
  });

  it("takes over a lock whose holder is a real zombie", async () => {
    // `sleep 0.05` exits while its parent (now `sleep 5`, which never waits) leaves it unreaped.
    const shell = spawn("sh", ["-c", "sleep 0.05 & echo $!; exec sleep 5"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    children.push(shell);
    const pid = await new Promise<number>((resolve) =>
      shell.stdout!.once("data", (chunk: Buffer) => resolve(Number(String(chunk).trim()))),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(isAlive(pid)).toBe(false);
    const dir = tmp.path;
    await writeFile(join(dir, ".lock"), JSON.stringify({ pid, token: "zombie", at: Date.now() }));
    const lock = await DirLock.acquire(dir);
    await lock.release();
  });
});
