import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { GatewayDrainingError, LaneClearedError, LaneTimeoutError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import {
  createLaneScheduler,
  type LaneScheduler,
  type LaneSnapshot,
} from "../../src/lanes/lane-scheduler.js";
import type { LaneEntryState } from "../../src/machines/lane-entry.machine.js";
import { type Priority, priorityLevel } from "../../src/policy/lane-priority.js";

// Random command sequences run against the real scheduler and against a reference model built from
// plain arrays. After every command: the same tasks started in the same order, every entry is where the
// model says, every caller got exactly the model's outcome (or is still pending), the snapshot matches,
// and, checked at every start, a session runs one task and a lane never runs more than its capacity.

const SESSIONS = ["A", "B", "C", undefined] as const;
const LANES = ["main", "cron", "adhoc"] as const;
const CLEARABLE = ["main", "cron", "adhoc", "session:A", "session:B", "session:C", "nowhere"] as const;
const PRIORITIES: readonly Priority[] = ["foreground", "normal", "background"];

type Command =
  | {
      kind: "run";
      session: string | undefined;
      lane: string;
      priority: Priority;
      timeoutMs: number | undefined;
      signal: boolean;
      preAborted: boolean;
    }
  | { kind: "complete" | "fail" | "abort"; pick: number }
  | { kind: "late"; pick: number; fail: boolean }
  | { kind: "clear"; lane: string }
  | { kind: "advance"; ms: number }
  | { kind: "drain" | "resume" }
  | { kind: "setCapacity"; lane: string; capacity: number };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("run" as const),
      session: fc.constantFrom(...SESSIONS),
      lane: fc.constantFrom(...LANES),
      priority: fc.constantFrom(...PRIORITIES),
      timeoutMs: fc.constantFrom(undefined, 5, 10),
      signal: fc.boolean(),
      preAborted: fc.nat(9).map((n) => n === 0),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("complete" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("fail" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("abort" as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("late" as const), pick: fc.nat(), fail: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("clear" as const), lane: fc.constantFrom(...CLEARABLE) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.constantFrom(1, 4, 5, 10) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drain" as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("resume" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("setCapacity" as const),
      lane: fc.constantFrom(...LANES),
      capacity: fc.integer({ min: 0, max: 3 }),
    }),
  },
);

type Outcome =
  | { kind: "done"; value: string }
  | { kind: "failed"; error: Error }
  | { kind: "timedOut"; lane: string; timeoutMs: number }
  | { kind: "cleared"; lane: string }
  | { kind: "aborted"; reason: Error }
  | { kind: "draining" }
  | { kind: "preAborted"; reason: Error };

interface ModelEntry {
  id: number;
  session: string | undefined;
  lane: string;
  level: 0 | 1 | 2;
  timeoutMs: number | undefined;
  state: LaneEntryState;
  startedAt: number;
  startSeq: number;
  outcome: Outcome | undefined;
}

const isWaiting = (e: ModelEntry) => e.state === "waitingForSession" || e.state === "waitingForSlot";

/** Inserts by priority level, after every entry of the same or a higher priority. */
function enqueue(list: ModelEntry[], entry: ModelEntry): void {
  const at = list.findIndex((other) => other.level > entry.level);
  if (at === -1) list.push(entry);
  else list.splice(at, 0, entry);
}

function without(list: ModelEntry[], entry: ModelEntry): void {
  const at = list.indexOf(entry);
  if (at !== -1) list.splice(at, 1);
}

/** The reference: what the scheduler must do, in the plainest terms. */
class Model {
  now = 0;
  admission: "open" | "draining" | "drained" = "open";
  nextId = 1;
  startSeq = 0;
  readonly capacity = new Map<string, number>([["main", 2]]);
  readonly active = new Map<string, number>();
  readonly laneQueue = new Map<string, ModelEntry[]>();
  readonly sessions = new Map<string, { holder: ModelEntry | null; queue: ModelEntry[] }>();
  readonly startOrder: number[] = [];
  readonly entries: ModelEntry[] = [];
  pendingDrains: Array<{ resolved: boolean }> = [];

  queueOf(lane: string): ModelEntry[] {
    const queue = this.laneQueue.get(lane) ?? [];
    this.laneQueue.set(lane, queue);
    return queue;
  }

  run(entry: ModelEntry): void {
    this.entries.push(entry);
    if (entry.session === undefined) {
      this.enterLane(entry);
      return;
    }
    const session = this.sessions.get(entry.session) ?? { holder: null, queue: [] };
    this.sessions.set(entry.session, session);
    if (session.holder === null) {
      session.holder = entry;
      this.enterLane(entry);
    } else {
      entry.state = "waitingForSession";
      enqueue(session.queue, entry);
    }
  }

  enterLane(entry: ModelEntry): void {
    entry.state = "waitingForSlot";
    enqueue(this.queueOf(entry.lane), entry);
    this.pump(entry.lane);
  }

  pump(lane: string): void {
    const queue = this.queueOf(lane);
    while ((this.active.get(lane) ?? 0) < (this.capacity.get(lane) ?? 1) && queue.length > 0) {
      const next = queue.shift()!;
      this.active.set(lane, (this.active.get(lane) ?? 0) + 1);
      next.state = "running";
      next.startedAt = this.now;
      next.startSeq = this.startSeq++;
      this.startOrder.push(next.id);
    }
  }

  /** A running entry ended (done, failed or timed out). */
  end(entry: ModelEntry, outcome: Outcome): void {
    entry.state = outcome.kind === "done" ? "done" : outcome.kind === "failed" ? "failed" : "timedOut";
    entry.outcome = outcome;
    this.active.set(entry.lane, (this.active.get(entry.lane) ?? 0) - 1);
    this.freeSession(entry);
    this.pump(entry.lane);
    this.checkSettled();
  }

  freeSession(entry: ModelEntry): void {
    const session = entry.session === undefined ? undefined : this.sessions.get(entry.session);
    if (!session || session.holder !== entry) return;
    session.holder = session.queue.shift() ?? null;
    if (session.holder) this.enterLane(session.holder);
  }

  abort(entry: ModelEntry, reason: Error): void {
    const heldSession = entry.state === "waitingForSlot";
    if (entry.state === "waitingForSession") without(this.sessions.get(entry.session!)!.queue, entry);
    else without(this.queueOf(entry.lane), entry);
    entry.state = "aborted";
    entry.outcome = { kind: "aborted", reason };
    if (heldSession) this.freeSession(entry);
  }

  clear(lane: string): number {
    let victims: ModelEntry[];
    if (lane.startsWith("session:")) {
      const session = this.sessions.get(lane.slice("session:".length));
      if (!session) return 0;
      victims = [...session.queue, ...(session.holder?.state === "waitingForSlot" ? [session.holder] : [])];
    } else {
      victims = [...this.queueOf(lane)];
      for (const session of this.sessions.values())
        victims.push(...session.queue.filter((e) => e.lane === lane));
    }
    const freed: string[] = [];
    for (const entry of victims) {
      if (entry.state === "waitingForSlot" && entry.session !== undefined) freed.push(entry.session);
      if (entry.state === "waitingForSession") without(this.sessions.get(entry.session!)!.queue, entry);
      else without(this.queueOf(entry.lane), entry);
      entry.state = "cleared";
      entry.outcome = { kind: "cleared", lane };
    }
    for (const key of freed) {
      const session = this.sessions.get(key)!;
      if (session.holder?.state !== "cleared") continue;
      session.holder = session.queue.shift() ?? null;
      if (session.holder) this.enterLane(session.holder);
    }
    return victims.length;
  }

  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      let due: ModelEntry | undefined;
      for (const e of this.entries) {
        if (e.state !== "running" || e.timeoutMs === undefined || e.startedAt + e.timeoutMs > until) continue;
        const at = e.startedAt + e.timeoutMs;
        if (
          !due ||
          at < due.startedAt + due.timeoutMs! ||
          (at === due.startedAt + due.timeoutMs! && e.startSeq < due.startSeq)
        ) {
          due = e;
        }
      }
      if (!due) break;
      this.now = due.startedAt + due.timeoutMs!;
      this.end(due, { kind: "timedOut", lane: due.lane, timeoutMs: due.timeoutMs! });
    }
    this.now = until;
  }

  get activeTotal(): number {
    let total = 0;
    for (const n of this.active.values()) total += n;
    return total;
  }

  checkSettled(): void {
    if (this.activeTotal !== 0) return;
    if (this.admission === "draining") this.admission = "drained";
    for (const drain of this.pendingDrains) drain.resolved = true;
    this.pendingDrains = [];
  }

  snapshot(): LaneSnapshot {
    const lanes: LaneSnapshot["lanes"] = {};
    const bound = new Set(
      this.entries.filter((e) => isWaiting(e) || e.state === "running").map((e) => e.lane),
    );
    for (const lane of new Set([...this.capacity.keys(), ...bound])) {
      lanes[lane] = {
        active: this.active.get(lane) ?? 0,
        queued: this.queueOf(lane).length,
        capacity: this.capacity.get(lane) ?? 1,
      };
    }
    for (const [key, session] of this.sessions) {
      if (!session.holder && session.queue.length === 0) continue;
      lanes[`session:${key}`] = {
        active: session.holder?.state === "running" ? 1 : 0,
        queued: session.queue.length + (session.holder?.state === "waitingForSlot" ? 1 : 0),
        capacity: 1,
      };
    }
    return { lanes };
  }
}

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
