import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { parseConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

// Schedules on the simulated clock: slots, durability across restarts and downtime, config errors.

const MINUTE = 60_000;

/** A gateway process on a shared store and clock; `stop` is its death (timers die with it). */
async function boot(store: MemoryStore, clock: SimulatedClock, schedules: unknown[], events: TillerEvent[]) {
  const gateway = createGateway({
    config: { schedules } as never,
    model: new ScriptedModel([{ reply: { text: "done: {{latestUser}}" } }], clock),
    channels: { t: new LoopbackChannel({ now: () => clock.now() }) },
    store,
    clock,
    logger: silentLogger,
  });
  gateway.subscribe((event) => events.push(event));
  await gateway.start();
  return gateway;
}

const slotsRun = (events: TillerEvent[]) =>
  events.filter((e) => e.type === "turn.started" && e.trigger === "cron").map((e) => e.at);

describe("schedules", () => {
  it("an everyMs schedule first runs one interval after creation, then every interval", async () => {
    const clock = new SimulatedClock();
    const events: TillerEvent[] = [];
    const store = new MemoryStore({ now: () => clock.now() });
    const gateway = await boot(
      store,
      clock,
      [{ id: "d", session: "t:1", everyMs: MINUTE, text: "digest" }],
      events,
    );
    await clock.runUntilIdle({ until: 3.5 * MINUTE });
    expect(slotsRun(events)).toEqual([MINUTE, 2 * MINUTE, 3 * MINUTE]);
    expect(gateway.schedules.list()).toEqual([
      expect.objectContaining({ id: "d", kind: "everyMs", nextRunAt: 4 * MINUTE, lastRunAt: 3 * MINUTE }),
    ]);
    await gateway.stop();
  });

  it("a slot missed while the process was down runs once at start, not once per missed slot", async () => {
    const clock = new SimulatedClock();
    const events: TillerEvent[] = [];
    const store = new MemoryStore({ now: () => clock.now() });
    const schedules = [{ id: "d", session: "t:1", everyMs: MINUTE, text: "digest" }];
    const first = await boot(store, clock, schedules, events);
    await clock.runUntilIdle({ until: 1.5 * MINUTE });
    await first.stop();
    // Down for three slots.
    await clock.advance(3 * MINUTE);
    const second = await boot(store, clock, schedules, events);
    await clock.runUntilIdle({ until: 6.2 * MINUTE });
    expect(slotsRun(events)).toEqual([MINUTE, 4.5 * MINUTE, 5 * MINUTE, 6 * MINUTE]);
    const ran = events.filter((e) => e.type === "schedule.ran").map((e) => e.why);
    expect(ran).toEqual(["due", "missed", "due", "due"]);
    await second.stop();
  });

  it("with catchUp: false a missed slot is skipped and says so", async () => {
    const clock = new SimulatedClock();
    const events: TillerEvent[] = [];
    const store = new MemoryStore({ now: () => clock.now() });
    const schedules = [{ id: "d", session: "t:1", everyMs: MINUTE, text: "digest", catchUp: false }];
    const first = await boot(store, clock, schedules, events);
    await clock.runUntilIdle({ until: 1.5 * MINUTE });
    await first.stop();
    await clock.advance(MINUTE);
    const second = await boot(store, clock, schedules, events);
    await clock.runUntilIdle({ until: 3.2 * MINUTE });
    expect(slotsRun(events)).toEqual([MINUTE, 3 * MINUTE]);
    expect(events.filter((e) => e.type === "schedule.skipped").map((e) => e.slot)).toEqual([2 * MINUTE]);
    await second.stop();
  });

  it("cron expressions run through croner in their time zone; an at schedule runs once", async () => {
    const clock = new SimulatedClock();
    const events: TillerEvent[] = [];
    const store = new MemoryStore({ now: () => clock.now() });
    const gateway = await boot(
      store,
      clock,
      [
        { id: "c", session: "t:1", cron: "*/30 * * * *", text: "half-hourly" },
        { id: "a", session: "t:2", at: 45 * MINUTE, text: "once" },
      ],
      events,
    );
    await clock.runUntilIdle({ until: 95 * MINUTE });
    expect(slotsRun(events)).toEqual([30 * MINUTE, 45 * MINUTE, 60 * MINUTE, 90 * MINUTE]);
    expect(gateway.schedules.list().find((s) => s.id === "a")?.nextRunAt).toBeNull();
    await gateway.stop();
  });

  it("across a scenario restart each slot runs exactly once", async () => {
    const { result } = await runScenario(
      parseScenario(
        `
config:
  schedules: [{ id: d, session: "t:1", everyMs: 60000, text: "digest" }]
model:
  - reply: { delayMs: 5000, text: "digest done" }
channels: { t: {} }
restart: [{ at: 62000 }, { at: 150000 }]
until: 200000
`,
        "s.yaml",
      ),
    );
    const cron = result.acks.filter((ack) => ack.trigger === "cron");
    expect(cron.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["schedule:d:60000", "started"],
      // The turn the first restart cut off resumes on its own; the slot is not triggered again.
      ["schedule:d:120000", "started"],
      ["schedule:d:180000", "started"],
    ]);
    const finals = result.transcripts["t:1"]!.filter((r) => r.role === "assistant");
    expect(finals).toHaveLength(3);
  });

  it("refuses a bad schedule naming the field", () => {
    expect(() => parseConfig({ schedules: [{ id: "x", session: "s", text: "t", cron: "* * *" }] })).toThrow(
      ConfigError,
    );
    expect(() => parseConfig({ schedules: [{ id: "x", session: "s", text: "t", cron: "* * *" }] })).toThrow(
      /config\.schedules\[0\]\.cron/,
    );
    expect(() =>
      parseConfig({ schedules: [{ id: "x", session: "s", text: "t", everyMs: 5, at: 10 }] }),
    ).toThrow(/config\.schedules\[0\].*exactly one of everyMs, cron or at/);
    expect(() =>
      parseConfig({
        schedules: [{ id: "x", session: "s", text: "t", cron: "0 9 * * *", timezone: "Mars/Olympus" }],
      }),
    ).toThrow(/config\.schedules\[0\]\.timezone/);
  });
});
