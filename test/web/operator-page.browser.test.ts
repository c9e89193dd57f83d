import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diagramProblems, localMsOfDay, msOfDay, SHOTS, useOperatorPage } from "../support/operator-page.js";
import { type Running, startServe } from "../support/serve-process.js";

// The operator page in a real browser against a real `tiller serve` (demo model, its demo_task tool
// made 10 s long so a loaded machine's browser still sees it run and steers into it, two schedules) on an ephemeral port, and against one started with TILLER_TOKEN. Screenshots go
// to artifacts/operator-page/ (git-ignored).
const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const TILLER = ["--import", "tsx", join(ROOT, "src/cli.ts")];
const SCHEDULES = [
  {
    id: "nightly",
    session: "web:ops",
    cron: "0 3 * * *",
    timezone: "Europe/Paris",
    text: "Summarize the night",
  },
  // Long past: it runs once as the server starts (a missed slot with catchUp), so it has a last run.
  { id: "welcome", session: "web:ops", at: "2020-01-01T00:00:00Z", text: "Say hello to the operators" },
];

const TASK_ENV = { TILLER_DEMO_TASK_MS: "10000" };
const ui = useOperatorPage(async (dir) => {
  const config = join(dir, "config.json");
  // A capacity group over the background lanes: the lanes card shows it.
  const laneGroups = { background: { capacity: 1, lanes: ["cron", "subagent"] } };
  await writeFile(config, JSON.stringify({ schedules: SCHEDULES, laneGroups }));
  return ["--store", join(dir, "data"), "--config", config];
}, TASK_ENV);
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
      timeout: 40_000,
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
    // `/stop` acted at once and never reached the transcript: the server's recent events still show it.
    expect(texts).toEqual([
      "Please run a task: tidy the invoices",
      "Actually, only the March ones.",
      "run another task please",
      "/stop",
    ]);
    expect(await page.textContent('.row:has(.bubble.user:has-text("/stop")) .ack')).toMatch(/stop/i);
    expect(await page.textContent("#session-list")).toContain("web:browser");
    expect(await page.textContent("#lanes")).toContain("main");
    const group = await page.textContent("#lanes [data-group='background']");
    expect(group).toContain("group background");
    expect(group).toContain("cron + subagent");
    expect(group).toMatch(/\d\/1 active/);
    expect(await page.textContent("#tab-commitments")).toMatch(/Commitments are off|No commitments/);
    // The timeline opens with what the session did before the page looked: the earlier turns' events.
    await page.waitForSelector("#tab-timeline li[data-type='tool.started']", { state: "attached" });
    const types = await page.$$eval("#tab-timeline li", (els) =>
      els.map((el) => el.getAttribute("data-type")),
    );
    // Both turns: the one answered after the correction, and the one stopped with /stop.
    expect(types.filter((type) => type === "turn.started").length).toBeGreaterThanOrEqual(2);
    expect(types).toEqual(expect.arrayContaining(["message.acked", "steer.injected", "final.delivered"]));
    await page.screenshot({ path: join(SHOTS, "5-after-reload.png") });
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("lists the schedules with their next and last run, and subagent sessions under their parent", async () => {
    const nightly = await page.waitForSelector('#schedules tr[data-schedule="nightly"]');
    expect(await nightly.textContent()).toContain("cron 0 3 * * * (Europe/Paris)");
    expect(await nightly.textContent()).toContain("not run yet");
    expect(await nightly.textContent()).toContain("web:ops");
    const welcome = await page.waitForSelector('#schedules tr[data-schedule="welcome"]');
    expect(await welcome.textContent()).toContain("done"); // no next run: a one-off that ran
    await page.waitForSelector('#schedules tr[data-schedule="welcome"] .chip.outcome-started');
    // The page's table is the API's: the same next run time.
    const api = (await (await fetch(`${server.url}/v1/schedules`)).json()) as {
      schedules: Array<{ id: string; nextRunAt: number | null; lastRun: { outcome: string } | null }>;
    };
    expect(api.schedules.map((s) => [s.id, s.lastRun?.outcome ?? null])).toEqual([
      ["nightly", null],
      ["welcome", "started"],
    ]);

    // A session keyed as a subagent of web:browser is listed under it.
    const posted = await fetch(
      `${server.url}/v1/sessions/${encodeURIComponent("web:browser:sub:1")}/messages`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: "hello from a child" }),
      },
    );
    expect(posted.status).toBe(200);
    const child = await page.waitForSelector(
      '#session-list li[data-session="web:browser"] ul.subagents li[data-session="web:browser:sub:1"]',
      { timeout: 10_000 },
    );
    expect(await child.textContent()).toContain("web:browser:sub:1");
    expect(await page.$('#session-list > li[data-session="web:browser:sub:1"]')).toBeNull();
    // Clicking the session of a schedule opens it.
    await page.click('#schedules tr[data-schedule="nightly"] button.link');
    await page.waitForSelector('#session-key:text-is("web:ops")');
    await page.screenshot({ path: join(SHOTS, "6-schedules-and-subagents.png") });
    expect(pageErrors).toEqual([]);
  }, 60_000);
});

describe("the operator page's chat is the whole conversation", () => {
  it("shows a steer another client posts while a task runs, at once, with its ack and arrival time; diagrams read well at 1400 px", async () => {
    const tab = await ui.browser.context.newPage();
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(error.message));
    await tab.setViewportSize({ width: 1400, height: 900 });
    await tab.goto(`${server.url}/#session=web:live`);
    await tab.waitForSelector("#run-diagram svg");
    await tab.waitForSelector("#conn.on");
    expect(await diagramProblems(tab)).toEqual([]);
    await send(tab, "Please run a task: sort the parcels");
    await activeRunState(tab, "toolBatch.toolRunning.working");
    expect(await diagramProblems(tab)).toEqual([]);

    // Another client steers over HTTP while the tool runs: the page shows it as it arrives, not
    // when the turn takes it in after the tool.
    const before = Date.now();
    const posted = await fetch(`${server.url}/v1/sessions/web%3Alive/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ id: "curl-1", text: "From curl: only the heavy ones." }),
    });
    const after = Date.now();
    expect(((await posted.json()) as { ack: { disposition: string } }).ack.disposition).toBe("steered");
    const row = '.row:has(.bubble.user[data-message="curl-1"])';
    await tab.waitForSelector(`${row} .ack-steered`, { timeout: 8_000 });
    expect(await tab.$(".bubble.reply:has-text('demo_task finished')")).toBeNull(); // still running
    const arrived = msOfDay((await tab.textContent(`${row} .time`)) ?? "");
    expect(arrived).toBeGreaterThanOrEqual(localMsOfDay(before));
    expect(arrived).toBeLessThanOrEqual(localMsOfDay(after));
    await tab.screenshot({ path: join(SHOTS, "8-steer-from-another-client.png") });

    const final = await tab.waitForSelector(".bubble.reply:has-text('demo_task finished')", {
      timeout: 40_000,
    });
    expect(await final.textContent()).toContain("only the heavy ones");
    expect(await diagramProblems(tab)).toEqual([]);
    // After a reload the message keeps its arrival time (the turn stored it seconds later) and its ack.
    await tab.reload();
    await tab.waitForSelector(`${row} .ack-steered`);
    expect(msOfDay((await tab.textContent(`${row} .time`)) ?? "")).toBe(arrived);
    const texts = await tab.$$eval(".bubble .text", (els) => els.map((el) => el.textContent));
    expect(texts.slice(0, 2)).toEqual([
      "Please run a task: sort the parcels",
      "From curl: only the heavy ones.",
    ]);
    expect(errors).toEqual([]);
    await tab.close();
  }, 90_000);
});

describe("the operator page of a server with TILLER_TOKEN", () => {
  const TOKEN = "page-token-7f3c9a";
  let guarded: Running & { url: string };
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tiller-page-token-"));
    guarded = await startServe(TILLER, ["--store", dir], { TILLER_TOKEN: TOKEN });
  }, 60_000);

  afterAll(async () => {
    guarded?.proc.kill("SIGTERM");
    await guarded?.exited;
    await rm(dir, { recursive: true, force: true });
  });

  it("asks for the token once, then works with it; without it the API answers 401", async () => {
    expect((await fetch(`${guarded.url}/v1/sessions`)).status).toBe(401);
    expect((await fetch(`${guarded.url}/v1/events`)).status).toBe(401);
    const tab = await ui.browser.context.newPage();
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(error.message));
    const urls: string[] = [];
    const refused: string[] = [];
    tab.on("request", (request) => urls.push(request.url()));
    tab.on("response", (response) => {
      if (response.status() === 401) refused.push(new URL(response.url()).pathname);
    });

    await tab.goto(`${guarded.url}/#session=web:guarded`);
    await tab.waitForSelector("#token-form");
    // No session is open yet: the chat's header says what to do.
    expect(await tab.textContent("#session-key")).toBe(
      "No session picked: choose one from the list, or open one by its key",
    );
    expect(refused).toContain("/v1/machines");
    expect(await tab.textContent("#conn")).toBe("needs a token");
    // A wrong token is refused and asked for again.
    await tab.fill("#token-input", "not-the-token");
    await tab.press("#token-input", "Enter");
    await tab.waitForSelector("#token-form:has-text('The token was refused')");
    await tab.fill("#token-input", TOKEN);
    await tab.press("#token-input", "Enter");

    // With it: the diagrams, the event stream and the deliveries stream all work.
    await tab.waitForSelector("#run-diagram svg");
    await tab.waitForSelector("#conn.on");
    expect(await tab.$("#token-form")).toBeNull();
    await send(tab, "hello behind a token");
    await tab.waitForSelector(".ack-started");
    await tab.waitForSelector(".bubble.reply", { timeout: 20_000 });
    expect(await tab.textContent("#tab-timeline")).toContain("final.delivered");
    expect(await tab.textContent("#schedules")).toContain("No schedules");

    // Kept for the tab: a reload does not ask again.
    await tab.reload();
    await tab.waitForSelector("#conn.on");
    await tab.waitForSelector(".bubble.reply");
    expect(await tab.$("#token-form")).toBeNull();
    await tab.screenshot({ path: join(SHOTS, "7-with-token.png") });

    // The token never travels in a URL, and the server never prints it.
    expect(urls.length).toBeGreaterThan(5);
    expect(urls.filter((url) => url.includes(TOKEN))).toEqual([]);
    expect(guarded.stdout() + guarded.stderr()).not.toContain(TOKEN);
    expect(errors).toEqual([]);
    await tab.close();
  }, 90_000);
});
