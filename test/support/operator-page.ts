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
 * a temp dir of the suite's own; `env` is the server's. Read the fields inside tests.
 */
export function useOperatorPage(
  args: (dir: string) => Promise<string[]> | string[],
  env: NodeJS.ProcessEnv = {},
) {
  let server: (Running & { url: string }) | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let page: Page | undefined;
  let dir = "";
  const pageErrors: string[] = [];
  beforeAll(async () => {
    execFileSync(join(ROOT, "node_modules/.bin/tsx"), ["scripts/build-web.ts", "--if-stale"], { cwd: ROOT });
    await mkdir(SHOTS, { recursive: true });
    dir = await mkdtemp(join(tmpdir(), "tiller-page-"));
    server = await startServe(["--import", "tsx", join(ROOT, "src/cli.ts")], await args(dir), env);
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

/**
 * What makes the page's machine diagrams hard to read, as the browser renders them: text drawn smaller
 * than `minPx` on screen, or text (a state's name, a shown transition label) reaching outside the part
 * of the card a person sees. Empty when both diagrams read well.
 */
export function diagramProblems(page: Page, minPx = 10): Promise<string[]> {
  return page.$$eval(
    "#session-diagram, #run-diagram",
    (boxes, minPx) => {
      const problems: string[] = [];
      for (const box of boxes) {
        const name = box.id;
        const svg = box.querySelector("svg");
        const seen = box.getBoundingClientRect();
        if (box.scrollWidth > box.clientWidth) problems.push(`${name}: wider than its card`);
        for (const text of svg.querySelectorAll("text")) {
          const rect = text.getBoundingClientRect();
          if (rect.width === 0 || !text.textContent) continue; // not shown
          const scale = svg.getScreenCTM()?.a ?? 1;
          const style = box.ownerDocument.defaultView.getComputedStyle(text);
          const px = Number.parseFloat(style.fontSize) * scale;
          const what = `${name} "${text.textContent}"`;
          if (px < minPx) problems.push(`${what}: ${px.toFixed(1)} px`);
          if (rect.left < seen.left - 0.5 || rect.right > seen.right + 0.5 || rect.top < seen.top - 0.5)
            problems.push(`${what}: cut at ${Math.round(rect.left)}..${Math.round(rect.right)}`);
        }
      }
      return problems;
    },
    minPx,
  );
}

/** A time the page shows (`17:04:05.120` or `17:04:05`) as ms since midnight. */
export function msOfDay(shown: string): number {
  const match = /(\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?/.exec(shown);
  if (!match) throw new Error(`no 24-hour time in "${shown}"`);
  const [, h, m, s, ms] = match;
  return ((Number(h) * 60 + Number(m)) * 60 + Number(s)) * 1000 + Number(ms ?? 0);
}

/** A local time as ms since midnight, as the page would show it. */
export function localMsOfDay(at: number): number {
  const date = new Date(at);
  return (
    ((date.getHours() * 60 + date.getMinutes()) * 60 + date.getSeconds()) * 1000 + date.getMilliseconds()
  );
}
