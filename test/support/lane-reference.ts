import fc from "fast-check";
import type { LaneSnapshot } from "../../src/lanes/lane-scheduler.js";
import type { LaneEntryState } from "../../src/machines/lane-entry.machine.js";
import type { Priority } from "../../src/policy/lane-priority.js";

// The lane scheduler's reference model for the property tests: the commands a random sequence is made
// of, their arbitrary, and the model built from plain arrays that says what the real scheduler must do.

const SESSIONS = ["A", "B", "C", undefined] as const;
const LANES = ["main", "cron", "adhoc"] as const;
const CLEARABLE = ["main", "cron", "adhoc", "session:A", "session:B", "session:C", "nowhere"] as const;
const PRIORITIES: readonly Priority[] = ["foreground", "normal", "background"];

export type Command =
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

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
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

export type Outcome =
  | { kind: "done"; value: string }
  | { kind: "failed"; error: Error }
  | { kind: "timedOut"; lane: string; timeoutMs: number }
  | { kind: "cleared"; lane: string }
  | { kind: "aborted"; reason: Error }
  | { kind: "draining" }
  | { kind: "preAborted"; reason: Error };

export interface ModelEntry {
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

export const isWaiting = (e: ModelEntry) => e.state === "waitingForSession" || e.state === "waitingForSlot";

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
export class Model {
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
