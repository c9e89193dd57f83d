import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { launchChromium } from "./chromium.js";
import { type Running, startServe } from "./serve-process.js";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
/** Where the browser tests put their screenshots (git-ignored). */
export const SHOTS = join(ROOT, "artifacts", "operator-page");

/**
 * A real `tiller serve` (through tsx, so it finds the built page next to its sources) with the
 * operator page built when its sources changed, and a Chromium page on it, for one suite. `args` gets
 * a temp dir of the suite's own. Read the fields inside tests.
 */
export function useOperatorPage(args: (dir: string) => Promise<string[]> | string[]) {
  let server: (Running & { url: string }) | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let page: Page | undefined;
  let dir = "";
  const pageErrors: string[] = [];
  beforeAll(async () => {
    execFileSync(join(ROOT, "node_modules/.bin/tsx"), ["scripts/build-web.ts", "--if-stale"], { cwd: ROOT });
    await mkdir(SHOTS, { recursive: true });
    dir = await mkdtemp(join(tmpdir(), "tiller-page-"));
    server = await startServe(["--import", "tsx", join(ROOT, "src/cli.ts")], await args(dir));
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on("pageerror", (error) => pageErrors.push(error.message));
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    server?.proc.kill("SIGTERM");
    await server?.exited;
    await rm(dir, { recursive: true, force: true });
  });
  return {
    get server() {
      if (!server) throw new Error("the server is up only inside tests");
      return server;
    },
    get browser() {
      if (!browser) throw new Error("the browser is open only inside tests");
      return browser;
    },
    get page() {
      if (!page) throw new Error("the page is open only inside tests");
      return page;
    },
    pageErrors,
  };
}
