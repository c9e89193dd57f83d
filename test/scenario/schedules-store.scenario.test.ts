import { describe, expect, it } from "vitest";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { play } from "../support/scenario.js";
import { useTempDir } from "../support/temp-dir.js";

// Scenarios on a JSONL store are how users test restarts: a schedule there runs as it does in memory
// and as `tiller serve` runs it, before and after a restart.

const HOUR = 3_600_000;
const dir = useTempDir("tiller-schedule-store");

const scenario = (restart: string) => `
name: hourly
config:
  schedules: [{ id: hourly, session: "web:1", channel: web, everyMs: ${HOUR}, text: "check in" }]
model:
  - reply: { delayMs: 300, text: "ok" }
channels:
  web: {}
${restart}
until: ${4.5 * HOUR}
`;

const slots = (result: ScenarioResult) =>
  result.events.filter((e) => e.type === "schedule.ran").map((e) => [e.slot, e.why, e.disposition]);

describe("schedules on a JSONL store in a scenario", () => {
  it("an hourly schedule runs every hour, as in memory", async () => {
    const inMemory = await play(scenario(""));
    const onStore = await play(scenario(""), dir.path);
    const expected = [1, 2, 3, 4].map((h) => [h * HOUR, "due", "started"]);
    expect(slots(inMemory)).toEqual(expected);
    expect(slots(onStore)).toEqual(expected);
    expect(onStore.events.filter((e) => e.type === "schedule.saveFailed")).toEqual([]);
  });

  it("after a restart the schedule keeps its hourly slots", async () => {
    const restart = `restart: [{ at: ${2.5 * HOUR} }]`;
    const inMemory = await play(scenario(restart));
    const onStore = await play(scenario(restart), dir.path);
    const expected = [1, 2, 3, 4].map((h) => [h * HOUR, "due", "started"]);
    expect(slots(inMemory)).toEqual(expected);
    expect(slots(onStore)).toEqual(expected);
    expect(onStore.events.filter((e) => e.type === "schedule.saveFailed")).toEqual([]);
  });
});
