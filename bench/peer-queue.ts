/**
 * The seed system's lane queue (OpenClaw's command queue) as a peer of the lane scheduler, on the same
 * workload: 10,000 no-op tasks round-robin over 100 session lanes, each nested in `main` (capacity 8),
 * as OpenClaw nests a session's lane in the global one. The package is not a dependency of this
 * project (it installs 291 packages, about 650 MB, and declares Node 24): install it anywhere and point
 * `TILLER_BENCH_OPENCLAW_DIR` at the directory that holds its `package.json` or at one whose
 * `node_modules/openclaw` does. Its queue module is found in `dist/` by its exports' function names
 * (the bundle's file and export names are hashed), so any build that keeps those names works.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

type Enqueue = (lane: string, task: () => Promise<unknown>) => Promise<unknown>;

export interface PeerQueue {
  /** The peer's version, as its package.json says. */
  version: string;
  /** One run of the workload on the peer's queue. */
  run(tasks: number, sessionKeys: readonly string[]): Promise<void>;
}

/** The peer queue, or why it is not measured. */
export async function loadPeerQueue(
  dir = process.env.TILLER_BENCH_OPENCLAW_DIR,
): Promise<PeerQueue | string> {
  if (!dir) return "skipped: set TILLER_BENCH_OPENCLAW_DIR to an installed openclaw package";
  for (const root of [dir, join(dir, "node_modules", "openclaw")]) {
    const files = await readdir(join(root, "dist")).catch(() => [] as string[]);
    const candidates = files.filter((file) => /^command-queue.*\.m?js$/.test(file));
    for (const file of candidates) {
      const module = (await import(pathToFileURL(join(root, "dist", file)).href)) as Record<string, unknown>;
      const byName = new Map(
        Object.values(module)
          .filter((value): value is (...args: never[]) => unknown => typeof value === "function")
          .map((fn) => [fn.name, fn]),
      );
      const enqueue = byName.get("enqueueCommandInLane") as Enqueue | undefined;
      const setConcurrency = byName.get("setCommandLaneConcurrency") as
        | ((lane: string, n: number) => void)
        | undefined;
      if (!enqueue || !setConcurrency) continue;
      const version = (JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string })
        .version;
      setConcurrency("main", 8);
      const noop = async (): Promise<number> => 1;
      return {
        version,
        async run(tasks, sessionKeys) {
          const calls = new Array<Promise<unknown>>(tasks);
          for (let i = 0; i < tasks; i++) {
            const session = `session:${sessionKeys[i % sessionKeys.length]}`;
            calls[i] = enqueue(session, () => enqueue("main", noop));
          }
          await Promise.all(calls);
        },
      };
    }
  }
  return `skipped: no command-queue module with enqueueCommandInLane in ${dir}/dist or ${dir}/node_modules/openclaw/dist`;
}
