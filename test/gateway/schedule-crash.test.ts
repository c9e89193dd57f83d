import { appendFile, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { SCHEDULE_FILE } from "../../src/adapters/jsonl/schedule-log.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ScheduleState, TranscriptStore } from "../../src/ports/store.js";
import { useTempDir } from "../support/temp-dir.js";

// Schedules across crashes at the worst moments: between a slot's accepted trigger and its saved
// outcome, between its saved intent and the trigger, and in the middle of a line of schedules.log.

const MINUTE = 60_000;
const SLOT = "schedule:d:60000";
const schedules = [{ id: "d", session: "t:1", everyMs: MINUTE, text: "digest" }];
// A dedupe window far shorter than the downtime: only the schedule's own record can prevent a repeat.
const limits = { dedupeWindowMs: 1000 };

/** A store whose writes can be held from a chosen moment on, as a process that dies before they land. */
class CrashStore extends MemoryStore {
  holdSchedule: ((state: ScheduleState | null) => boolean) | undefined;
  holdStates = false;

  override async saveSchedule(id: string, state: ScheduleState | null): Promise<void> {
    if (this.holdSchedule?.(state)) return new Promise<void>(() => {});
    return super.saveSchedule(id, state);
  }

  override async saveState(session: string, state: unknown): Promise<void> {
    if (this.holdStates) return new Promise<void>(() => {});
    return super.saveState(session, state);
  }
}

/** One gateway process on `store` and `clock`; abandoning it (never advancing its clock) is kill -9. */
async function boot(store: TranscriptStore, clock: SimulatedClock) {
  const events: TillerEvent[] = [];
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    config: { schedules, limits } as never,
    model: new ScriptedModel([{ reply: { delayMs: 500, text: "done: {{latestUser}}" } }], clock),
    channels: { t: channel },
    store,
    clock,
    logger: silentLogger,
  });
  gateway.subscribe((event) => events.push(event));
  await gateway.start();
  return { gateway, events, channel };
}

const userIds = async (store: TranscriptStore) =>
  (await store.read("t:1")).flatMap((r) => (r.role === "user" ? [r.messageId] : []));

describe("a crash between a slot's accepted trigger and its saved outcome", () => {
  it("does not run the slot again after the restart, however long the process was down", async () => {
    let clock = new SimulatedClock();
    const store = new CrashStore({ now: () => clock.now() });
    // The outcome of slot 60000 (its state saved after the trigger) never lands.
    store.holdSchedule = (state) => state?.lastRunAt === MINUTE && state.pending === undefined;
    const first = await boot(store, clock);
    await clock.runUntilIdle({ until: MINUTE + 2000 });
    expect(first.events.filter((e) => e.type === "schedule.ran").map((e) => e.disposition)).toEqual([
      "started",
    ]);
    expect(first.channel.sent.map((sent) => sent.text)).toEqual(["done: digest"]);
    expect((await store.loadSchedules()).d).toMatchObject({ nextRunAt: MINUTE, pending: MINUTE });

    // Down for ten minutes: far past the dedupe window.
    store.holdSchedule = undefined;
    clock = new SimulatedClock(11 * MINUTE);
    const second = await boot(store, clock);
    expect(second.events.filter((e) => e.type === "schedule.recovered")).toEqual([
      expect.objectContaining({ schedule: "d", slot: MINUTE, messageId: SLOT }),
    ]);
    expect(second.gateway.schedules.list()[0]).toMatchObject({
      lastRunAt: MINUTE,
      lastDisposition: "accepted",
      nextRunAt: 12 * MINUTE,
    });
    await clock.runUntilIdle({ until: 12 * MINUTE + 2000 });
    expect(await userIds(store)).toEqual([SLOT, "schedule:d:720000"]);
    expect(second.channel.sent.map((sent) => sent.text)).toEqual(["done: digest"]);
    expect((await store.loadSchedules()).d).not.toHaveProperty("pending");
    await second.gateway.stop();
  });

  it("a slot whose trigger never got through before the crash runs once at the restart", async () => {
    let clock = new SimulatedClock();
    const store = new CrashStore({ now: () => clock.now() });
    // The session's state save that would make the trigger's turn durable never lands: no ack.
    store.holdStates = true;
    const first = await boot(store, clock);
    await clock.runUntilIdle({ until: MINUTE + 2000 });
    expect(first.events.some((e) => e.type === "schedule.ran")).toBe(false);
    expect(await userIds(store)).toEqual([]);
    expect((await store.loadSchedules()).d).toMatchObject({ pending: MINUTE });

    store.holdStates = false;
    clock = new SimulatedClock(11 * MINUTE);
    const second = await boot(store, clock);
    await clock.runUntilIdle({ until: 11 * MINUTE + 2000 });
    const ran = second.events.filter((e) => e.type === "schedule.ran");
    expect(ran.map((e) => [e.slot, e.why, e.disposition])).toEqual([[MINUTE, "interrupted", "started"]]);
    expect(await userIds(store)).toEqual([SLOT]);
    expect(second.channel.sent.map((sent) => sent.text)).toEqual(["done: digest"]);
    expect(second.gateway.schedules.list()[0]).toMatchObject({ nextRunAt: 12 * MINUTE });
    await second.gateway.stop();
  });
});

describe("a torn last line in schedules.log", () => {
  const dir = useTempDir("tiller-schedule-torn");

  async function process(start: number, until: number) {
    const clock = new SimulatedClock(start);
    const store = await JsonlStore.openDir({ dir: dir.path, now: () => clock.now() });
    const running = await boot(store, clock);
    await clock.runUntilIdle({ until, isBusy: () => running.gateway.isBusy || store.isBusy() });
    await running.gateway.stop();
    return running.events.filter((e) => e.type === "turn.started").map((e) => e.at);
  }

  it("is ignored and cut off on restart; every slot still runs exactly once", async () => {
    expect(await process(0, 2.5 * MINUTE)).toEqual([MINUTE, 2 * MINUTE]);
    // The process died writing the next state: half a line, no newline.
    const file = join(dir.path, SCHEDULE_FILE);
    await appendFile(file, '{"id":"d","state":{"nextRunAt":18');
    // Back before the next slot: nothing repeats, nothing is missed.
    expect(await process(2.6 * MINUTE, 4.5 * MINUTE)).toEqual([3 * MINUTE, 4 * MINUTE]);
    const lines = (await readFile(file, "utf8")).split("\n").filter((line) => line !== "");
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    // The states written after the torn line are the ones the next start reads.
    expect(await process(4.6 * MINUTE, 5.5 * MINUTE)).toEqual([5 * MINUTE]);
    const texts = async () => {
      const store = await JsonlStore.openDir({ dir: dir.path });
      const records = await store.read("t:1");
      await store.close();
      return records.flatMap((r) => (r.role === "user" ? [r.messageId] : []));
    };
    expect(await texts()).toEqual([1, 2, 3, 4, 5].map((n) => `schedule:d:${n * MINUTE}`));
  });
});
