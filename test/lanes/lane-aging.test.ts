import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createLaneScheduler } from "../../src/lanes/lane-scheduler.js";
import type { Priority } from "../../src/policy/lane-priority.js";

// Aging on the simulated clock: a waiting entry rises one priority level per `agingMs` waited, so
// sustained foreground load cannot starve background work; FIFO within a priority still holds.

/**
 * One slot in `main`, kept busy by foreground tasks of `taskMs` that arrive faster than they run, with
 * `background` entries enqueued at t=1. Returns when each background entry started.
 */
async function underLoad(agingMs: number, background: string[], horizonMs: number) {
  const clock = new SimulatedClock();
  const lanes = createLaneScheduler({ capacity: { main: 1 }, agingMs, clock });
  const order: string[] = [];
  const startedAt = new Map<string, number>();
  const task = (name: string, ms: number) => (signal: AbortSignal) => {
    order.push(name);
    startedAt.set(name, clock.now());
    return new Promise<void>((resolve) => clock.setTimeout(resolve, ms)).then(() => signal);
  };
  const settled: Promise<unknown>[] = [];
  const submit = (name: string, priority: Priority) =>
    settled.push(lanes.run({ priority }, task(name, 100)).catch(() => undefined));
  submit("f0", "foreground");
  await clock.advance(1);
  for (const name of background) submit(name, "background");
  // Two foreground arrivals per task length: the foreground backlog only grows.
  for (let t = 1, n = 1; t < horizonMs; t += 50, n++) {
    submit(`f${n}`, "foreground");
    await clock.advance(50);
  }
  return { order, startedAt, lanes };
}

describe("lane aging", () => {
  it("a background entry waits about two aging periods under any foreground load, then starts", async () => {
    const { startedAt } = await underLoad(1000, ["b1"], 5000);
    const started = startedAt.get("b1");
    expect(started).toBeDefined();
    // background → normal after 1000 ms, → foreground after 2000 ms; it then starts at the next free
    // slot (tasks last 100 ms), ahead of every foreground entry that arrived after it.
    expect(started! - 1).toBeGreaterThanOrEqual(2000);
    expect(started! - 1).toBeLessThanOrEqual(2100);
  });

  it("with agingMs 0 priorities stay strict: the background entry starves while foreground work arrives", async () => {
    const { startedAt } = await underLoad(0, ["b1"], 5000);
    expect(startedAt.has("b1")).toBe(false);
  });

  it("entries of one priority that arrived in order still start in order", async () => {
    const { order } = await underLoad(1000, ["b1", "b2", "b3"], 8000);
    const backgrounds = order.filter((name) => name.startsWith("b"));
    expect(backgrounds).toEqual(["b1", "b2", "b3"]);
  });

  it("refuses a negative or non-finite agingMs", () => {
    expect(() => createLaneScheduler({ agingMs: -1 })).toThrow(/agingMs/);
    expect(() => createLaneScheduler({ agingMs: Number.NaN })).toThrow(/agingMs/);
  });
});
