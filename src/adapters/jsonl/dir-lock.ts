import { readFileSync } from "node:fs";
import { link, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { nanoid } from "nanoid";
import { StoreLockedError } from "../../errors.js";

/** Lock files held by live stores of this process: a pid check cannot tell two of our own apart. */
const heldHere = new Set<string>();

interface Holder {
  pid: number | undefined;
  raw: string;
}

/**
 * An exclusive lock on a store directory: `dir/.lock` holds `{"pid","token","at"}`. It is created with
 * `link(2)` from a fully written temp file, so it never exists half-written. A lock whose pid is dead
 * (a gateway killed with SIGKILL) is taken over; a live holder makes `acquire` fail with
 * `StoreLockedError`. Pid reuse can make a stale lock look live: the error names the pid to check.
 *
 * @example
 * ```ts
 * const lock = await DirLock.acquire("/var/lib/tiller");
 * try { ... } finally { await lock.release(); }
 * ```
 */
export class DirLock {
  private released = false;

  private constructor(
    readonly path: string,
    private readonly token: string,
  ) {}

  static async acquire(dir: string): Promise<DirLock> {
    const path = resolve(dir, ".lock");
    if (heldHere.has(path))
      throw new StoreLockedError(dir, `another open store in this process (pid ${process.pid})`);
    heldHere.add(path);
    const token = nanoid();
    const tmp = join(dir, `.lock.${process.pid}.${token}.tmp`);
    try {
      const content = JSON.stringify({ pid: process.pid, token, at: Date.now() });
      await writeFile(tmp, content);
      // A few rounds: each failed link either finds a live holder (refuse) or removes a stale one.
      for (let attempt = 0; attempt < 8; attempt++) {
        try {
          await createExclusive(tmp, path, content);
          await sweepLeftovers(dir);
          return new DirLock(path, token);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        }
        const holder = await readHolder(path);
        if (!holder) continue;
        // Our own pid here means a store of this process that was never closed: it is not in heldHere.
        if (holder.pid !== undefined && holder.pid !== process.pid && isAlive(holder.pid)) {
          throw new StoreLockedError(dir, `pid ${holder.pid} (${path})`);
        }
        await removeStale(path, holder.raw);
      }
      throw new StoreLockedError(dir, `a contended lock (${path})`);
    } catch (error) {
      heldHere.delete(path);
      throw error;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Removes the lock file if it is still ours. Idempotent. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    try {
      const holder = await readHolder(this.path);
      if (holder?.raw.includes(this.token)) await rm(this.path, { force: true });
    } finally {
      heldHere.delete(this.path);
    }
  }
}

/** Removes temp and set-aside lock files of processes that died mid-acquire (they name their pid). */
async function sweepLeftovers(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    const pid = Number(/^\.lock\.(?:stale\.)?(\d+)\./.exec(name)?.[1]);
    if (pid && pid !== process.pid && !isAlive(pid)) await rm(join(dir, name), { force: true });
  }
}

/** `link(2)` publishes a whole file at once; file systems without hard links fall back to `O_EXCL`. */
async function createExclusive(tmp: string, path: string, content: string): Promise<void> {
  try {
    await link(tmp, path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
    await writeFile(path, content, { flag: "wx" });
  }
}

async function readHolder(path: string): Promise<Holder | undefined> {
  let raw: string;
  try {
    raw = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  let pid: number | undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    const value = typeof parsed === "object" && parsed !== null ? (parsed as { pid?: unknown }).pid : parsed;
    if (typeof value === "number" && Number.isInteger(value) && value > 0) pid = value;
  } catch {
    // Unreadable content cannot name a live holder: treat it as stale.
  }
  return { pid, raw };
}

/** Whether `pid` runs: a zombie (killed, not yet reaped by its parent) holds nothing and counts as dead. */
export function isAlive(pid: number, readStat: (path: string) => string | undefined = readProcStat): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const stat = readStat(`/proc/${pid}/stat`);
  // `pid (comm) S ...`: the state follows the last ")" (comm may itself hold parentheses).
  const state = stat?.slice(stat.lastIndexOf(")") + 1).trim()[0];
  return state !== "Z" && state !== "X";
}

function readProcStat(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined; // no procfs (macOS, Windows): the signal check alone decides
  }
}

/**
 * Removes a stale lock without ever removing a fresh one: move it aside atomically, and if what moved
 * is not the stale content we judged (another process took the lock in between), put it back.
 */
async function removeStale(path: string, staleRaw: string): Promise<void> {
  const aside = `${path}.stale.${process.pid}.${nanoid()}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    if ((await readFile(aside, "utf8")) !== staleRaw) await link(aside, path).catch(() => undefined);
  } finally {
    await rm(aside, { force: true });
  }
}
