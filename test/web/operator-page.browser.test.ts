import { join } from "node:path";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { SHOTS, useOperatorPage } from "../support/operator-page.js";

// The operator page in a real browser against a real `tiller serve` (demo model, its 5 s demo_task
// tool) on an ephemeral port. Screenshots go to artifacts/operator-page/ (git-ignored).
const ui = useOperatorPage((dir) => ["--store", dir]);
let page: Page;
let server: { url: string };
const pageErrors = ui.pageErrors;
beforeAll(() => {
  page = ui.page;
  server = ui.server;
});

const activeRunState = (page: Page, state: string) =>
  page.waitForSelector(`#run-diagram [data-state="run.${state}"].active`, { timeout: 20_000 });

async function send(page: Page, text: string): Promise<void> {
  await page.fill("#input", text);
  await page.press("#input", "Enter");
}

describe("the operator page", () => {
  it("streams a turn, shows the steered ack while the tool runs, and moves the run diagram to the final", async () => {
    await page.goto(`${server.url}/#session=web:browser`);
    await page.waitForSelector("#run-diagram svg");
    await page.waitForSelector("#conn.on");
    await send(page, "Please run a task: tidy the invoices");
    await page.waitForSelector(".ack-started");
    await activeRunState(page, "toolBatch.toolRunning.working");
    await page.waitForSelector("#status.tone-tool");
    expect(await page.textContent("#status")).toContain("Running tool demo_task");
    // What the model said with its tool call is shown as such, not as a draft of the answer.
    await page.waitForSelector(".bubble.draft .chip:has-text('said before a tool · call 1')");

    // A correction while the tool runs is steered into the turn, and the ack says so truthfully.
    await send(page, "Actually, only the March ones.");
    const steered = await page.waitForSelector(".ack-steered");
    expect(await steered.textContent()).toMatch(/demo_task is running.*can be cancelled/);
    // The transition that led to the tool is the one marked.
    expect(await page.$$eval("#run-diagram .edge.hot", (edges) => edges.length)).toBeGreaterThan(0);
    await page.screenshot({ path: join(SHOTS, "1-steered-during-tool.png") });

    // After the tool the run streams again (the steered message reaches the model), then the final arrives.
    await activeRunState(page, "streaming");
    // The next model call's draft replaces the text of the first one as it streams.
    await page.waitForSelector(".bubble.draft .chip:has-text('new draft · call 2')");
    expect(await page.$$eval(".bubble.draft", (drafts) => drafts.length)).toBe(1);
    await page.screenshot({ path: join(SHOTS, "2-streaming-after-tool.png") });
    const final = await page.waitForSelector(".bubble.reply:has-text('demo_task finished')", {
      timeout: 20_000,
    });
    expect(await final.textContent()).toContain("only the March ones");
    await activeRunState(page, "done");
    await page.waitForSelector("#status.tone-idle");
    expect(await page.$(".bubble.draft")).toBeNull();
    const timeline = await page.textContent("#tab-timeline");
    expect(timeline).toContain("tool.started");
    expect(timeline).toContain("final.delivered");
    await page.screenshot({ path: join(SHOTS, "3-final.png") });
  }, 90_000);

  it("stops a turn with /stop and tells the story of a message when it is clicked", async () => {
    await send(page, "run another task please");
    await activeRunState(page, "toolBatch.toolRunning.working");
    await send(page, "/stop");
    const control = await page.waitForSelector(".ack-control");
    expect(await control.textContent()).toMatch(/stop/i);
    await activeRunState(page, "aborted");
    await page.waitForSelector("#status.tone-idle");

    await page.click(".bubble.user >> text=Actually, only the March ones.");
    await page.waitForSelector("#tab-explain h3");
    const story = await page.textContent("#tab-explain");
    expect(story).toContain("steered");
    expect(story).toMatch(/answered by web:browser#/);
    await page.screenshot({ path: join(SHOTS, "4-stopped-and-story.png") });
  }, 60_000);

  it("shows the history after a reload, with the session in the list", async () => {
    await page.reload();
    await page.waitForSelector(".bubble.reply:has-text('demo_task finished')");
    const texts = await page.$$eval(".bubble.user .text", (els) => els.map((el) => el.textContent));
    expect(texts).toEqual([
      "Please run a task: tidy the invoices",
      "Actually, only the March ones.",
      "run another task please",
    ]); // `/stop` acted at once and never reached the transcript
    expect(await page.textContent("#session-list")).toContain("web:browser");
    expect(await page.textContent("#lanes")).toContain("main");
    expect(await page.textContent("#tab-commitments")).toMatch(/Commitments are off|No commitments/);
    await page.screenshot({ path: join(SHOTS, "5-after-reload.png") });
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
