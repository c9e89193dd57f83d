import type { LaneWait } from "../events.js";
import type { Clock, TimerHandle } from "../ports/clock.js";
import type { Entry } from "./entry.js";
import { waitFields } from "./wait-fields.js";
import type { QueueLinks } from "./wait-list.js";
import { WarnList } from "./warn-list.js";

/**
 * `lane.waitExceeded` for entries that wait longer than `warnAfterMs`: one timer, for the oldest entry
 * not warned about yet. Entries arrive in time order, so the list is sorted by arrival and each entry is
 * looked at once.
 */
export class WaitWarnings {
  private readonly list = new WarnList();
  private timer: TimerHandle | null = null;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private readonly warnAfterMs: number,
    /** Told about each entry still waiting once its time is up, with the event's fields. */
    private readonly exceeded: (fields: LaneWait) => void,
  ) {}

  /** A waiting entry to watch (once: an entry warned about or watched already is left alone). */
  track(entry: Entry): void {
    if (entry.warned || entry.aLinked) return;
    this.list.push(entry);
    this.arm();
  }

  /** The entry stopped waiting (started, cleared or aborted). */
  forget(entry: Entry): void {
    this.list.remove(entry);
  }

  private arm(): void {
    const oldest = this.list.first;
    if (!oldest) return;
    const due = oldest.enqueuedAt + this.warnAfterMs;
    if (this.timer && this.timerAt <= due) return;
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timerAt = due;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, due - this.clock.now()));
  }

  private fire(): void {
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    // All fields are computed before any event goes out (a listener may clear or enqueue), sharing one
    // memo of queue positions: counting each entry's queue from scratch made a sweep over a large
    // backlog quadratic (40,000 waiting entries blocked the event loop for 15 s).
    const memo = new Map<QueueLinks, number>();
    const due: Array<[Entry, LaneWait]> = [];
    for (
      let entry = this.list.first;
      entry && entry.enqueuedAt + this.warnAfterMs <= now;
      entry = this.list.first
    ) {
      this.list.remove(entry);
      entry.warned = true;
      due.push([entry, waitFields(entry, false, now, memo)]);
    }
    for (const [entry, fields] of due) {
      if (entry.state === "waitingForSession" || entry.state === "waitingForSlot") this.exceeded(fields);
    }
    this.arm();
  }
}
