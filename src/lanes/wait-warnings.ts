import type { LaneWait } from "../events.js";
import type { Clock, TimerHandle } from "../ports/clock.js";
import type { Entry } from "./entry.js";
import { waitFields } from "./wait-fields.js";
import type { QueueLinks } from "./wait-list.js";

/**
 * `lane.waitExceeded` for entries that wait longer than `warnAfterMs`: one timer, for the oldest entry
 * not warned about yet. Ids are handed out in arrival order, so the entries not yet ended, read by id
 * from a cursor, are sorted by wait deadline: each id is looked at once, and an entry carries nothing
 * for this (a list of its own cost three fields on every waiting entry, a flag one more): an entry still
 * waiting that the cursor has passed was warned about (see `warned`).
 */
export class WaitWarnings {
  /** Every entry with a lower id has started, ended, or been warned about. */
  private cursor = 0;
  private timer: TimerHandle | null = null;
  /**
   * When the timer is due, on the scheduler's time (read only while `timer` is set): a small integer,
   * never Infinity. A field that ever held a non-integer is boxed, and code not yet optimized allocates a
   * number on every read of it (once per waiting entry).
   */
  private timerAt = 0;

  constructor(
    private readonly clock: Clock,
    /** The scheduler's time (the one entries' `enqueuedAt` is on). */
    private readonly now: () => number,
    private readonly warnAfterMs: number,
    /** The entry not yet ended with the lowest id >= `id`, if any. */
    private readonly firstFrom: (id: number) => Entry | undefined,
    /** Told about each entry still waiting once its time is up, with the event's fields. */
    private readonly exceeded: (fields: LaneWait) => void,
  ) {}

  /** A waiting entry to watch (an entry warned about already is left alone). */
  track(entry: Entry): void {
    if (entry.id >= this.cursor) this.arm(entry);
  }

  /**
   * Whether `lane.waitExceeded` was reported for a waiting (or just starting) entry. The cursor passes
   * an entry only once it started, ended or was warned about, and a started entry never waits again.
   */
  warned(entry: Entry): boolean {
    return entry.id < this.cursor;
  }

  private arm(oldest: Entry): void {
    const due = oldest.enqueuedAt + this.warnAfterMs;
    if (this.timer && this.timerAt <= due) return;
    this.schedule(due);
  }

  /**
   * Apart from `arm`, which runs for every waiting entry: its closure over `this`, made there, made each
   * call allocate a context for it (40 B an entry), though nearly every call returns at once.
   */
  private schedule(due: number): void {
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timerAt = due;
    this.timer = this.clock.setTimeout(() => this.fire(), Math.max(0, due - this.now()));
  }

  private fire(): void {
    this.timer = null;
    this.timerAt = 0;
    const now = this.now();
    // All fields are computed before any event goes out (a listener may clear or enqueue), sharing one
    // memo of queue positions: counting each entry's queue from scratch made a sweep over a large
    // backlog quadratic (40,000 waiting entries blocked the event loop for 15 s).
    const memo = new Map<QueueLinks, number>();
    const due: Array<[Entry, LaneWait]> = [];
    let next: Entry | undefined;
    for (let entry = this.firstFrom(this.cursor); entry; entry = this.firstFrom(entry.id + 1)) {
      this.cursor = entry.id + 1;
      if (!entry.isWaiting) continue;
      if (entry.enqueuedAt + this.warnAfterMs > now) {
        next = entry;
        this.cursor = entry.id;
        break;
      }
      due.push([entry, waitFields(entry, false, now, memo)]);
    }
    for (const [entry, fields] of due) if (entry.isWaiting) this.exceeded(fields);
    if (next) this.arm(next);
  }
}
