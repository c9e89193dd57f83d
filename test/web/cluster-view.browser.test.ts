import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { SHOTS, useOperatorPage } from "../support/operator-page.js";
import { usePostgresSchema } from "../support/postgres.js";

// The operator page in a real browser against `tiller serve --postgres`: the cluster card shows the
// cluster's lanes (from the database, across processes), the processes and who owns or runs each
// session. Screenshots go to artifacts/operator-page/ (git-ignored).
const db = usePostgresSchema("page");
// The demo task runs 10 s, so a loaded machine's page still sees it active in the lane.
const TASK_ENV = { TILLER_DEMO_TASK_MS: "10000" };
const ui = useOperatorPage(async (dir) => {
  const config = join(dir, "config.json");
  await writeFile(config, JSON.stringify({ lanes: { main: 2 } }));
  return ["--store", join(dir, "store"), "--config", config, "--postgres", db.url, "--schema", db.schema];
}, TASK_ENV);
let page: Page;
let processId: string;
beforeAll(() => {
  page = ui.page;
  processId = /process (\S+)/.exec(ui.server.stdout())![1]!;
});

const cell = (page: Page, selector: string) => page.textContent(selector).then((text) => text?.trim());

describe("the operator page on PostgreSQL", () => {
  it("shows the cluster's lanes, its processes and which process owns or runs each session", async () => {
    // Another member, with a session it owns and a task of its own waiting in the main lane.
    await db.pool.query(
      `INSERT INTO ${db.schema}.processes (process_id, alive_until) VALUES ('pother', now() + interval '1 hour');
       INSERT INTO ${db.schema}.session_owners (session_key, owner, fence, lease_until)
         VALUES ('web:elsewhere', 'pother', 1, now() + interval '1 hour');
       INSERT INTO ${db.schema}.lane_runs (lane, session_key, priority, state, owner, local_id)
         VALUES ('bulk', 'web:elsewhere', 1, 'queued', 'pother', 1)`,
    );
    await page.goto(`${ui.server.url}/#session=web:cluster`);
    await page.waitForSelector("#cluster-card:not([hidden]) [data-cluster-lane=main]");
    expect(await cell(page, "#cluster-caption")).toBe(`schema ${db.schema} · this process ${processId}`);
    expect(await cell(page, "[data-cluster-lane=main] td:nth-child(2)")).toBe("2");
    expect(await cell(page, "[data-cluster-lane=bulk] td:nth-child(4)")).toBe("1");
    expect(await page.textContent(`[data-process=${processId}]`)).toContain("this one");
    expect(await page.$("[data-process=pother].alive")).not.toBeNull();
    // Times on the 24-hour clock, as in the timeline (the browser's locale would say "5:04:05 PM").
    expect(await cell(page, "[data-process=pother]")).toMatch(/alive until \d\d:\d\d:\d\d$/);
    expect(await cell(page, "[data-cluster-session='web:elsewhere'] .owner")).toBe("pother");

    // A turn with the demo's 10 s tool: its run is active in the main lane, on this process.
    await page.fill("#input", "Please run a task: count the crates");
    await page.press("#input", "Enter");
    await page.waitForSelector("[data-cluster-lane=main] td.active:text-is('1')", { timeout: 20_000 });
    await page.waitForSelector(
      `[data-cluster-session='web:cluster'] .running:has-text('${processId} (main)')`,
    );
    await page.screenshot({ path: join(SHOTS, "cluster-1-running.png") });
    const { rows } = await db.pool.query(
      `SELECT count(*)::int AS n FROM ${db.schema}.lane_runs WHERE lane = 'main' AND state = 'active'`,
    );
    expect(rows[0].n).toBe(1);

    // When the turn is done the lane is free again, cluster-wide.
    await page.waitForSelector(".bubble.reply:has-text('demo_task finished')", { timeout: 30_000 });
    await page.waitForSelector("[data-cluster-lane=main] td.active:text-is('0')", { timeout: 20_000 });
    // The idle session stays this process's for the idle hold (2 s), then nobody owns it.
    await page.waitForSelector("[data-cluster-session='web:cluster']", {
      state: "detached",
      timeout: 20_000,
    });
    await page.screenshot({ path: join(SHOTS, "cluster-2-idle.png") });
    expect(ui.pageErrors).toEqual([]);
  }, 90_000);
});
