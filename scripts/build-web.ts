/**
 * Builds the operator page (`web/`) into `dist/web/` with Vite. `--if-stale` builds only when a source
 * file (or the lock file) is newer than the last build, so `npm start` stays quick after the first run.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const repo = fileURLToPath(new URL("..", import.meta.url));
const webDir = path.join(repo, "web");
const built = path.join(repo, "dist", "web", "index.html");

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/** True when `dist/web/` is missing or older than the page's sources. */
export function isStale(): boolean {
  if (!existsSync(built)) return true;
  const sources = Math.max(newestMtime(webDir), statSync(path.join(repo, "package-lock.json")).mtimeMs);
  return sources > statSync(built).mtimeMs;
}

const args = process.argv.slice(2);
if (args.includes("--if-stale") && !isStale()) {
  console.log("operator page is up to date (dist/web)");
} else {
  await build({ configFile: path.join(webDir, "vite.config.ts"), logLevel: "warn" });
  console.log("built the operator page into dist/web");
}
