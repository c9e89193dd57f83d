import { execFile, spawn } from "node:child_process";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { JsonlStore } from "../../../src/adapters/jsonl/jsonl-store.js";
import { StoreLockedError } from "../../../src/errors.js";
import { useTempDir } from "../../support/temp-dir.js";

// One process at a time owns a JSONL store's directory: the lock file, and taking it over from a
// process that died.

const run = promisify(execFile);
const PROBE = resolve(import.meta.dirname, "lock-probe.ts");

describe("JsonlStore directory lock", () => {
  const temp = useTempDir("tiller-jsonl");
  it("refuses a second store on the directory in this process until the first closes", async () => {
    const first = await JsonlStore.openDir({ dir: temp.path });
    await expect(JsonlStore.openDir({ dir: temp.path })).rejects.toBeInstanceOf(StoreLockedError);
    await first.close();
    const second = await JsonlStore.openDir({ dir: temp.path });
    await second.close();
  });

  it("makes another process fail with STORE_LOCKED while held, and succeed after close", async () => {
    const store = await JsonlStore.openDir({ dir: temp.path });
    expect(await probe(temp.path)).toEqual({ ok: false, code: "STORE_LOCKED" });
    await store.close();
    expect(await probe(temp.path)).toEqual({ ok: true });
  }, 30_000);

  it("takes over the lock of a process killed with SIGKILL", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", PROBE, temp.path, "hold"], {
      cwd: resolve(import.meta.dirname, "../.."),
      stdio: ["pipe", "pipe", "inherit"],
    });
    await new Promise<void>((ready, fail) => {
      child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("held") && ready());
      child.on("exit", () => fail(new Error("probe exited before holding the lock")));
    });
    await expect(JsonlStore.openDir({ dir: temp.path })).rejects.toMatchObject({ code: "STORE_LOCKED" });
    const exited = new Promise((done) => child.on("exit", done));
    child.kill("SIGKILL");
    await exited;
    const store = await JsonlStore.openDir({ dir: temp.path });
    expect(JSON.parse(await readFile(join(temp.path, ".lock"), "utf8"))).toMatchObject({ pid: process.pid });
    await store.close();
  }, 30_000);

  it("takes over a lock file that names a dead pid", async () => {
    const { stdout } = await run(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
    await writeFile(join(temp.path, ".lock"), JSON.stringify({ pid: Number(stdout), token: "old" }));
    const store = await JsonlStore.openDir({ dir: temp.path });
    expect(JSON.parse(await readFile(join(temp.path, ".lock"), "utf8"))).toMatchObject({ pid: process.pid });
    await store.close();
    await expect(stat(join(temp.path, ".lock"))).rejects.toMatchObject({ code: "ENOENT" });
  }, 30_000);
});

async function probe(dir: string): Promise<unknown> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", PROBE, dir, "try"], {
    cwd: resolve(import.meta.dirname, "../.."),
  });
  return JSON.parse(stdout.trim());
}
