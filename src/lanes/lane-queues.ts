import type { LaneEntryState } from "../machines/lane-entry.machine.js";
import { type Entry, LaneGroup, SessionLane, WorkloadLane } from "./entry.js";
import { EntryIndex } from "./entry-index.js";
import type { LaneGroupSpec } from "./lane-groups.js";
import type { LaneSnapshot } from "./lane-scheduler.types.js";
import { SESSION_PREFIX } from "./run-options.js";
import type { Aging } from "./wait-list.js";
import type { WaitWarnings } from "./wait-warnings.js";

/**
 * The lane scheduler's queues: its workload and session lanes, the entries not yet ended, and the running
 * and waiting counts. It decides which entry goes next and hands it to `start`; running, settling and
 * rejecting tasks, events and drain are `createLaneScheduler`'s.
 *
 * @example
 * ```ts
 * const clock = new SystemClock();
 * const firstFrom = (id: number) => queues.firstFrom(id);
 * const warnings = new WaitWarnings(clock, () => clock.now(), 2000, firstFrom, (fields) => console.warn(fields));
 * const start = (entry: Entry) => entry.task(new AbortController().signal);
 * const queues = new LaneQueues(new Map([["main", 2]]), warnings, start);
 * queues.workload("main").capacity; // 2
 * queues.snapshot(); // { lanes: { main: { active: 0, queued: 0, capacity: 2 } } }
 * ```
 */
export class LaneQueues {
  private readonly workloads = new Map<string, WorkloadLane>();
  private readonly sessions = new Map<string, SessionLane>();
  private readonly entries = new EntryIndex<Entry>();
  private readonly groups = new Map<string, LaneGroup>();
  private active = 0;
  private queued = 0;

  constructor(
    /** Capacities set by options or `setCapacity`: the scheduler's map, which it keeps updating. */
    private readonly configured: ReadonlyMap<string, number>,
    private readonly warnings: WaitWarnings,
    /** Runs the task of an entry just given a slot (and counted as running). */
    private readonly start: (entry: Entry) => void,
    /** Waiting entries rise one priority level per `aging.ms` waited (none: strict priorities). */
    private readonly aging?: Aging,
    /** Each grouped lane's capacity group, by lane name. */
    private readonly groupOf: ReadonlyMap<string, LaneGroupSpec> = new Map(),
  ) {
    for (const spec of groupOf.values()) {
      if (!this.groups.has(spec.name)) this.groups.set(spec.name, new LaneGroup(spec.name, spec.capacity));
    }
  }

  /** Tasks running now, across all lanes. */
  get activeCount(): number {
    return this.active;
  }

  /** Tasks waiting now, across all lanes. */
  get queuedCount(): number {
    return this.queued;
  }

  /** Where an entry stands; undefined once it ended or was removed. */
  entryState(entryId: number): LaneEntryState | undefined {
    return this.entries.get(entryId)?.state;
  }

  /** The entry not yet ended with the lowest id >= `id` (the wait-warning sweep reads them in order). */
  firstFrom(id: number): Entry | undefined {
    return this.entries.firstFrom(id);
  }

  /** The workload lane `name`, made on first use with its configured capacity (1 if none). */
  workload(name: string): WorkloadLane {
    let lane = this.workloads.get(name);
    if (!lane) {
      lane = new WorkloadLane(name, this.configured.get(name) ?? 1, this.aging);
      this.workloads.set(name, lane);
      const spec = this.groupOf.get(name);
      if (spec) {
        lane.group = this.groups.get(spec.name)!;
        lane.group.members.push(lane);
      }
    }
    return lane;
  }

  /** Counts a new entry as waiting; `enqueue` then puts it in line. */
  add(entry: Entry): void {
    this.entries.add(entry);
    entry.lane.bound++;
    this.queued++;
  }

  /** Puts an added entry behind its session's holder, or in its workload lane if it is first. */
  enqueue(entry: Entry, sessionKey: string | undefined): void {
    if (sessionKey === undefined) {
      this.enterWorkload(entry, entry.enqueuedAt);
      return;
    }
    let session = this.sessions.get(sessionKey);
    if (!session) {
      session = new SessionLane(sessionKey, this.aging);
      this.sessions.set(sessionKey, session);
    }
    entry.sessionLane = session;
    if (session.holder === null) {
      session.holder = entry;
      this.enterWorkload(entry, entry.enqueuedAt);
    } else {
      entry.state = "waitingForSession";
      // Just enqueued: it starts waiting at its enqueue time, read from the clock a moment ago.
      session.waiting.push(entry, entry.enqueuedAt);
      this.warnings.track(entry);
    }
  }

  /**
   * The entry is first in its session (or has none): start it or queue it for a slot. `now`: the clock's
   * time when the caller just read it (a new entry's enqueue time).
   */
  private enterWorkload(entry: Entry, now?: number): void {
    const lane = entry.lane;
    entry.state = "waitingForSlot";
    // A group with room has no member with room left waiting (pumpGroup keeps it so): no one to pass.
    if (
      lane.active < lane.capacity &&
      lane.waiting.size === 0 &&
      (lane.group === null || lane.group.active < lane.group.capacity)
    ) {
      this.takeSlot(entry);
      return;
    }
    lane.waiting.push(entry, now);
    this.warnings.track(entry);
    this.pump(lane);
  }

  /** Starts waiting entries while the lane has free slots. */
  pump(lane: WorkloadLane): void {
    if (lane.group !== null) {
      this.pumpGroup(lane.group);
      return;
    }
    while (lane.active < lane.capacity) {
      const next = lane.waiting.shift();
      if (!next) break;
      this.takeSlot(next);
    }
  }

  /**
   * Starts waiting entries of a group's lanes while the group has room: each time the best head (by
   * priority level, aging included, then enqueue order) of the members whose own lane has a free slot.
   */
  private pumpGroup(group: LaneGroup): void {
    // The aging clock is read once per pass, and only when two members have a candidate.
    let now: number | undefined;
    while (group.active < group.capacity) {
      let best: Entry | null = null;
      let bestLane: WorkloadLane | null = null;
      let bestLevel = 3;
      for (const member of group.members) {
        if (member.active >= member.capacity || member.waiting.size === 0) continue;
        const head = member.waiting.peek();
        if (!head) continue;
        if (best === null || bestLane === null) {
          // Levels are compared only when a second lane has a candidate (the common case has one).
          best = head;
          bestLane = member;
          bestLevel = -1;
          continue;
        }
        now ??= this.aging?.now() ?? 0;
        if (bestLevel < 0) bestLevel = bestLane.waiting.effectiveLevel(best, now);
        const level = member.waiting.effectiveLevel(head, now);
        if (level < bestLevel || (level === bestLevel && head.id < best.id)) {
          best = head;
          bestLane = member;
          bestLevel = level;
        }
      }
      if (best === null || bestLane === null) break;
      bestLane.waiting.remove(best);
      this.takeSlot(best);
    }
  }

  /** A running entry ended: free its slot and its session, let the next ones in. */
  retire(entry: Entry): void {
    const lane = entry.lane;
    lane.active--;
    if (lane.group !== null) lane.group.active--;
    lane.bound--;
    this.active--;
    this.entries.delete(entry);
    stopListening(entry);
    this.freeSession(entry);
    this.pump(lane);
    this.forgetIfIdle(entry);
  }

  /** Takes a waiting entry out of line (its caller aborted); its session's next entry moves up. */
  abort(entry: Entry): void {
    const heldSession = entry.state === "waitingForSlot";
    this.unqueue(entry);
    entry.state = "aborted";
    if (heldSession) this.freeSession(entry);
    this.forgetIfIdle(entry);
  }

  /**
   * Takes every entry waiting in lane `laneName` (`session:<key>` or a workload lane) out of line and
   * returns them, marked cleared; undefined if there is no such lane.
   */
  clear(laneName: string): Entry[] | undefined {
    const victims: Entry[] = [];
    if (laneName.startsWith(SESSION_PREFIX)) {
      const session = this.sessions.get(laneName.slice(SESSION_PREFIX.length));
      if (!session) return undefined;
      victims.push(...session.waiting);
      if (session.holder?.state === "waitingForSlot") victims.push(session.holder);
    } else {
      const lane = this.workloads.get(laneName);
      if (!lane) return undefined;
      victims.push(...lane.waiting);
      // Entries still behind their session's running task are bound for this lane too.
      for (const session of this.sessions.values()) {
        for (const entry of session.waiting) if (entry.lane === lane) victims.push(entry);
      }
    }
    const freedSessions = new Set<SessionLane>();
    for (const entry of victims) {
      if (entry.state === "waitingForSlot" && entry.sessionLane) freedSessions.add(entry.sessionLane);
      this.unqueue(entry);
      entry.state = "cleared";
    }
    for (const session of freedSessions) {
      if (session.holder && session.holder.state === "cleared") this.freeSession(session.holder);
    }
    for (const entry of victims) this.forgetIfIdle(entry);
    return victims;
  }

  snapshot(): LaneSnapshot {
    const snapshot: LaneSnapshot = { lanes: {} };
    const lanes = snapshot.lanes;
    for (const [name, capacity] of this.configured) lanes[name] = { active: 0, queued: 0, capacity };
    for (const lane of this.workloads.values()) {
      lanes[lane.name] = { active: lane.active, queued: lane.waiting.size, capacity: lane.capacity };
    }
    for (const session of this.sessions.values()) {
      const waitingForSlot = session.holder?.state === "waitingForSlot" ? 1 : 0;
      lanes[SESSION_PREFIX + session.key] = {
        // A holder stopping after its deadline still holds the session.
        active: session.holder?.state === "running" || session.holder?.state === "stopping" ? 1 : 0,
        queued: session.waiting.size + waitingForSlot,
        capacity: 1,
      };
    }
    if (this.groups.size > 0) snapshot.groups = this.groupSnapshot();
    return snapshot;
  }

  /** Each group's budget, its running tasks and the tasks waiting for a slot in its lanes. */
  private groupSnapshot(): NonNullable<LaneSnapshot["groups"]> {
    const groups: NonNullable<LaneSnapshot["groups"]> = {};
    for (const group of this.groups.values()) {
      groups[group.name] = { active: group.active, queued: 0, capacity: group.capacity, lanes: [] };
    }
    for (const [lane, spec] of this.groupOf) {
      const entry = groups[spec.name]!;
      entry.lanes.push(lane);
      entry.queued += this.workloads.get(lane)?.waiting.size ?? 0;
    }
    return groups;
  }

  /** A waiting entry takes a slot of its lane, stops waiting and starts. */
  private takeSlot(entry: Entry): void {
    entry.lane.active++;
    if (entry.lane.group !== null) entry.lane.group.active++;
    this.active++;
    this.queued--;
    this.start(entry);
  }

  private freeSession(entry: Entry): void {
    const session = entry.sessionLane;
    if (!session || session.holder !== entry) return;
    session.holder = null;
    const next = session.waiting.shift();
    if (next) {
      session.holder = next;
      this.enterWorkload(next);
    }
  }

  /** Removes a waiting entry (clear or abort) without starting anything yet. */
  private unqueue(entry: Entry): void {
    if (entry.state === "waitingForSession") entry.sessionLane?.waiting.remove(entry);
    else entry.lane.waiting.remove(entry);
    this.queued--;
    entry.lane.bound--;
    this.entries.delete(entry);
    stopListening(entry);
  }

  private forgetIfIdle(entry: Entry): void {
    const session = entry.sessionLane;
    if (session && session.holder === null && session.waiting.size === 0) this.sessions.delete(session.key);
    const lane = entry.lane;
    // `bound` also counts entries still waiting behind their session: dropping the lane while they point
    // at it would detach them (clear() would miss them, and a second lane of the same name would double
    // the capacity).
    // A grouped lane stays: its group lists it among its members.
    if (lane.bound === 0 && lane.group === null && !this.configured.has(lane.name)) {
      this.workloads.delete(lane.name);
    }
  }
}

/** A long-lived caller signal must not collect one listener per task. */
function stopListening(entry: Entry): void {
  const extras = entry.extras;
  if (extras?.onAbort) extras.callerSignal?.removeEventListener("abort", extras.onAbort);
}
