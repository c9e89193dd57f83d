import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { createLaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { deferred } from "../support/deferred.js";

// Random command sequences over capacity groups and deadlines with an abort grace, on a simulated
// clock. Checked at every start: no lane over its capacity, no group over its budget, one task per
// session. Checked after every step: no idle slot while a task that could use it waits (a lane with a
// free slot whose group has room waits for nothing). At the end every caller settled exactly once.

const GROUPS = { background: { capacity: 2, lanes: ["cron", "subagent", "review"] } };
const CAPACITY = { main: 2, cron: 2, subagent: 1, review: 2 };
const LANES = ["main", "cron", "subagent", "review"] as const;

type Command =
  | {
      kind: "run";
      lane: (typeof LANES)[number];
      session: string | undefined;
      priority: "foreground" | "normal" | "background";
      timeoutMs: number | undefined;
      abortGraceMs: number;
    }
  | { kind: "settle"; pick: number; ok: boolean }
  | { kind: "advance"; ms: number }
  | { kind: "setCapacity"; lane: (typeof LANES)[number]; capacity: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant("run" as const),
    lane: fc.constantFrom(...LANES),
    session: fc.constantFrom(undefined, "A", "B", "C"),
    priority: fc.constantFrom("foreground" as const, "normal" as const, "background" as const),
    timeoutMs: fc.constantFrom(undefined, 5, 10),
    abortGraceMs: fc.constantFrom(0, 3),
  }),
  fc.record({ kind: fc.constant("settle" as const), pick: fc.nat(), ok: fc.boolean() }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 8 }) }),
  fc.record({
    kind: fc.constant("setCapacity" as const),
    lane: fc.constantFrom(...LANES),
    capacity: fc.integer({ min: 0, max: 3 }),
  }),
);

async function runScenario(commands: Command[]): Promise<void> {
  const clock = new SimulatedClock();
  const capacity: Record<string, number> = { ...CAPACITY };
  const running = new Map<number, { lane: string; session: string | undefined }>();
  const violations: string[] = [];
  const meta = new Map<number, { lane: string; session: string | undefined }>();
  const lanes = createLaneScheduler({
    clock,
    capacity: CAPACITY,
    groups: GROUPS,
    onEvent: (event) => {
      if (event.type === "lane.enqueued")
        meta.set(event.entryId, { lane: event.lane, session: event.session });
      if (event.type === "lane.started") {
        running.set(event.entryId, meta.get(event.entryId)!);
        const all = [...running.values()];
        if (all.filter((t) => t.lane === event.lane).length > (capacity[event.lane] ?? 1))
          violations.push(`lane ${event.lane} over its capacity`);
        if (all.filter((t) => GROUPS.background.lanes.includes(t.lane)).length > GROUPS.background.capacity)
          violations.push("group background over its budget");
        if (event.session && all.filter((t) => t.session === event.session).length > 1)
          violations.push(`session ${event.session} runs two tasks`);
      }
      if (event.type === "lane.ended") running.delete(event.entryId);
    },
  });
  const gates: Array<ReturnType<typeof deferred<string>>> = [];
  const settlements: number[] = [];
  for (const step of commands) {
    if (step.kind === "run") {
      const gate = deferred<string>();
      // Settled before its task starts, a gate is read only later: no unhandled rejection meanwhile.
      gate.promise.catch(() => {});
      gates.push(gate);
      const index = settlements.push(0) - 1;
      const { kind: _, ...options } = step;
      lanes
        .run(options, () => gate.promise)
        .then(
          () => settlements[index]!++,
          () => settlements[index]!++,
        );
    } else if (step.kind === "settle" && gates.length > 0) {
      const gate = gates[step.pick % gates.length]!;
      if (step.ok) gate.resolve("done");
      else gate.reject(new Error("failed"));
    } else if (step.kind === "advance") await clock.advance(step.ms);
    else if (step.kind === "setCapacity") {
      capacity[step.lane] = step.capacity;
      lanes.setCapacity(step.lane, step.capacity);
    }
    await clock.advance(0);
    checkNoIdleSlot(lanes.snapshot());
  }
  // Everything ends: capacity everywhere, every task released, every deadline and grace past.
  for (const lane of LANES) {
    capacity[lane] = 3;
    lanes.setCapacity(lane, 3);
  }
  for (let round = 0; round < commands.length + 2; round++) {
    for (const gate of gates) gate.resolve("released");
    await clock.advance(20);
  }
  expect(violations).toEqual([]);
  expect(lanes.activeCount).toBe(0);
  expect(lanes.queuedCount).toBe(0);
  expect(settlements.every((count) => count === 1)).toBe(true);
}

/** Work-conserving: a lane with a free slot, in a group with room (or in none), has nobody waiting. */
function checkNoIdleSlot(snapshot: ReturnType<ReturnType<typeof createLaneScheduler>["snapshot"]>): void {
  const group = snapshot.groups?.background;
  expect(group?.active).toBeLessThanOrEqual(GROUPS.background.capacity);
  for (const lane of LANES) {
    const numbers = snapshot.lanes[lane];
    if (!numbers || numbers.active >= numbers.capacity) continue;
    const grouped = GROUPS.background.lanes.includes(lane);
    if (grouped && group && group.active >= group.capacity) continue;
    expect(numbers.queued, `${lane} has a free slot and its group room, yet tasks wait`).toBe(0);
  }
}

describe("capacity groups and abort graces against random command sequences", () => {
  it("never exceed a lane's capacity or a group's budget, leave no usable slot idle, and settle every caller once", async () => {
    await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 40 }), runScenario), {
      numRuns: 150,
    });
  });
});
