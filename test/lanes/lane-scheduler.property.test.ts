import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { GatewayDrainingError, LaneClearedError, LaneTimeoutError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import { createLaneScheduler, type LaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { priorityLevel } from "../../src/policy/lane-priority.js";
import {
  type Command,
  commandArb,
  isWaiting,
  Model,
  type ModelEntry,
  type Outcome,
} from "../support/lane-reference.js";

// Random command sequences run against the real scheduler and against a reference model built from
// plain arrays. After every command: the same tasks started in the same order, every entry is where the
// model says, every caller got exactly the model's outcome (or is still pending), the snapshot matches,
// and, checked at every start, a session runs one task and a lane never runs more than its capacity.

interface Caller {
  status: "pending" | "fulfilled" | "rejected";
  value?: unknown;
  reason?: unknown;
  settlements: number;
}

function track(promise: Promise<unknown>): Caller {
  const caller: Caller = { status: "pending", settlements: 0 };
  promise.then(
    (value) => Object.assign(caller, { status: "fulfilled", value, settlements: caller.settlements + 1 }),
    (reason) => Object.assign(caller, { status: "rejected", reason, settlements: caller.settlements + 1 }),
  );
  return caller;
}

/** A caller's settlement in comparable form: the error class and fields, or the value or reason itself. */
function observe(caller: Caller): unknown {
  if (caller.status === "pending") return "pending";
  if (caller.status === "fulfilled") return { settlements: caller.settlements, value: caller.value };
  const reason = caller.reason;
  const settlements = caller.settlements;
  if (reason instanceof LaneTimeoutError)
    return { settlements, timedOut: reason.lane, timeoutMs: reason.timeoutMs };
  if (reason instanceof LaneClearedError) return { settlements, cleared: reason.lane };
  if (reason instanceof GatewayDrainingError) return { settlements, draining: true };
  return { settlements, reason };
}

/** What observe() must return for the model's outcome: settled exactly once, with exactly this. */
function expected(outcome: Outcome | undefined): unknown {
  if (!outcome) return "pending";
  const settlements = 1;
  switch (outcome.kind) {
    case "done":
      return { settlements, value: outcome.value };
    case "failed":
      return { settlements, reason: outcome.error };
    case "aborted":
    case "preAborted":
      return { settlements, reason: outcome.reason };
    case "timedOut":
      return { settlements, timedOut: outcome.lane, timeoutMs: outcome.timeoutMs };
    case "cleared":
      return { settlements, cleared: outcome.lane };
    case "draining":
      return { settlements, draining: true };
  }
}

async function runScenario(commands: Command[]): Promise<void> {
  const clock = new SimulatedClock();
  const model = new Model();
  const violations: string[] = [];
  const enqueuedIds: number[] = [];
  const runningBySession = new Map<string, number>();
  let dropped = 0;
  let expectedDropped = 0;
  let lanes: LaneScheduler | undefined;
  const onEvent = (event: TillerEvent) => {
    if (event.type === "lane.enqueued") enqueuedIds.push(event.entryId as number);
    if (event.type === "lane.lateResultDropped") dropped++;
    const key = event.session;
    if (event.type === "lane.started") {
      const lane = lanes?.snapshot().lanes[event.lane as string];
      if (!lane || lane.active > lane.capacity)
        violations.push(`lane ${event.lane} over capacity: ${JSON.stringify(lane)}`);
      if (key !== undefined) {
        runningBySession.set(key, (runningBySession.get(key) ?? 0) + 1);
        if (runningBySession.get(key)! > 1) violations.push(`session ${key} runs two tasks`);
      }
    }
    if (event.type === "lane.ended" && key !== undefined)
      runningBySession.set(key, runningBySession.get(key)! - 1);
  };
  lanes = createLaneScheduler({ clock, capacity: { main: 2 }, onEvent });

  const started: number[] = [];
  const gates = new Map<number, { resolve(v: string): void; reject(e: unknown): void; settled: boolean }>();
  const signals = new Map<number, AbortSignal>();
  const controllers = new Map<number, AbortController>();
  const callers: Array<{ caller: Caller; entry: ModelEntry | undefined; outcome?: Outcome }> = [];
  const drains: Array<{ caller: Caller; model: { resolved: boolean } }> = [];
  const abortedWhileRunning = new Set<number>();

  for (const command of commands) {
    switch (command.kind) {
      case "run": {
        const controller = command.signal || command.preAborted ? new AbortController() : undefined;
        const reason = new Error("aborted before submission");
        if (command.preAborted) controller?.abort(reason);
        const id = model.nextId;
        const promise = lanes.run(
          {
            session: command.session,
            lane: command.lane,
            priority: command.priority,
            timeoutMs: command.timeoutMs,
            signal: controller?.signal,
          },
          (signal) => {
            started.push(id);
            signals.set(id, signal);
            return new Promise<string>((resolve, reject) =>
              gates.set(id, { resolve, reject, settled: false }),
            );
          },
        );
        const caller = track(promise);
        if (model.admission !== "open")
          callers.push({ caller, entry: undefined, outcome: { kind: "draining" } });
        else if (command.preAborted)
          callers.push({ caller, entry: undefined, outcome: { kind: "preAborted", reason } });
        else {
          model.nextId++;
          const entry: ModelEntry = {
            id,
            session: command.session,
            lane: command.lane,
            level: priorityLevel(command.priority),
            timeoutMs: command.timeoutMs,
            state: "waitingForSession",
            startedAt: 0,
            startSeq: 0,
            outcome: undefined,
          };
          if (controller) controllers.set(id, controller);
          callers.push({ caller, entry });
          model.run(entry);
        }
        break;
      }
      case "complete":
      case "fail": {
        const running = model.entries.filter((e) => e.state === "running");
        const entry = running[command.pick % Math.max(1, running.length)];
        if (!entry) break;
        const gate = gates.get(entry.id)!;
        gate.settled = true;
        if (command.kind === "complete") {
          gate.resolve(`v${entry.id}`);
          model.end(entry, { kind: "done", value: `v${entry.id}` });
        } else {
          const error = new Error(`task ${entry.id} failed`);
          gate.reject(error);
          model.end(entry, { kind: "failed", error });
        }
        break;
      }
      case "late": {
        const timedOut = model.entries.filter((e) => e.state === "timedOut" && !gates.get(e.id)!.settled);
        const entry = timedOut[command.pick % Math.max(1, timedOut.length)];
        if (!entry) break;
        const gate = gates.get(entry.id)!;
        gate.settled = true;
        if (command.fail) gate.reject(new Error("late failure"));
        else gate.resolve("late result");
        expectedDropped++;
        break;
      }
      case "abort": {
        const live = model.entries.filter(
          (e) => (isWaiting(e) || e.state === "running") && controllers.get(e.id)?.signal.aborted === false,
        );
        const entry = live[command.pick % Math.max(1, live.length)];
        if (!entry) break;
        const reason = new Error(`abort ${entry.id}`);
        if (entry.state === "running") abortedWhileRunning.add(entry.id);
        else model.abort(entry, reason);
        controllers.get(entry.id)!.abort(reason);
        break;
      }
      case "clear":
        expect(lanes.clear(command.lane)).toBe(model.clear(command.lane));
        break;
      case "advance":
        model.advance(command.ms);
        await clock.advance(command.ms);
        break;
      case "drain": {
        if (model.admission === "open") model.admission = "draining";
        const pending = { resolved: false };
        model.pendingDrains.push(pending);
        drains.push({ caller: track(lanes.drain()), model: pending });
        break;
      }
      case "resume":
        model.admission = "open";
        lanes.resume();
        break;
      case "setCapacity":
        model.capacity.set(command.lane, command.capacity);
        lanes.setCapacity(command.lane, command.capacity);
        model.pump(command.lane);
        break;
    }
    model.checkSettled();
    await clock.advance(0);

    // One comparison per step (a deep equal per entry made the property ten times slower).
    const live = (e: ModelEntry) => (isWaiting(e) || e.state === "running" ? e.state : undefined);
    expect({
      violations,
      started,
      enqueuedIds,
      states: model.entries.map((e) => lanes!.entryState(e.id)),
      callers: callers.map(({ caller }) => observe(caller)),
      runningSignalsAborted: [...abortedWhileRunning].map((id) => signals.get(id)?.aborted),
      drains: drains.map((drain) => drain.caller.status),
      lateResultsDropped: dropped,
      snapshot: lanes.snapshot(),
      admission: lanes.actor.getSnapshot().value,
      isDraining: lanes.isDraining,
      activeCount: lanes.activeCount,
      queuedCount: lanes.queuedCount,
    }).toEqual({
      violations: [],
      started: model.startOrder,
      enqueuedIds: model.entries.map((e) => e.id),
      states: model.entries.map(live),
      callers: callers.map(({ entry, outcome }) => expected(entry ? entry.outcome : outcome)),
      runningSignalsAborted: [...abortedWhileRunning].map(() => true),
      drains: drains.map((drain) => (drain.model.resolved ? "fulfilled" : "pending")),
      lateResultsDropped: expectedDropped,
      snapshot: model.snapshot(),
      admission: model.admission,
      isDraining: model.admission !== "open",
      activeCount: model.activeTotal,
      queuedCount: model.entries.filter(isWaiting).length,
    });
  }
}

describe("lane scheduler against a reference model", () => {
  it("random command sequences lose, duplicate and reorder nothing, and settle every caller once, rightly", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commandArb, { minLength: 5, maxLength: 40, size: "max" }), runScenario),
      { numRuns: 200 },
    );
  }, 30_000);

  it("a known tricky sequence: clear frees sessions whose next entries race for the same lane", async () => {
    await runScenario([
      { kind: "setCapacity", lane: "cron", capacity: 0 },
      ...(["A", "B", "C"] as const).flatMap((session) => [
        {
          kind: "run",
          session,
          lane: "cron",
          priority: "normal",
          timeoutMs: undefined,
          signal: false,
          preAborted: false,
        } as const,
        {
          kind: "run",
          session,
          lane: "adhoc",
          priority: "background",
          timeoutMs: 5,
          signal: true,
          preAborted: false,
        } as const,
      ]),
      { kind: "clear", lane: "cron" },
      { kind: "advance", ms: 5 },
      { kind: "late", pick: 0, fail: false },
      { kind: "advance", ms: 10 },
    ]);
  });
});
