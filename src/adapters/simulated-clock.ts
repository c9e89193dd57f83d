import type { Clock, TimerHandle } from "../ports/clock.js";

interface SimTimer {
  readonly at: number;
  readonly seq: number;
  callback: (() => void) | null;
}

/**
 * A deterministic clock: time moves only when the owner advances it. Timers fire in (time, creation)
 * order, and between two timers every pending promise reaction and I/O callback is allowed to settle,
 * so async code observes the same order on every run.
 *
 * @example
 * ```ts
 * const clock = new SimulatedClock();
 * clock.setTimeout(() => console.log("at", clock.now()), 1000);
 * await clock.runUntilIdle(); // "at 1000", in microseconds of wall time
 * ```
 */
export class SimulatedClock implements Clock {
  private current: number;
  private seq = 0;
  private live = 0;
  // Binary min-heap on (at, seq): O(log n) insert and pop; cleared timers are dropped lazily.
  private readonly heap: SimTimer[] = [];

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer: SimTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, callback };
    this.push(timer);
    this.live++;
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    const timer = handle as SimTimer;
    if (timer?.callback) {
      timer.callback = null;
      this.live--;
    }
  }

  /** Number of timers that are still due to fire. */
  get pendingTimers(): number {
    return this.live;
  }

  /** Time of the next live timer, or undefined when none is pending. */
  nextTimerAt(): number | undefined {
    this.dropCleared();
    return this.heap[0]?.at;
  }

  /** Fires the next live timer (moving time forward to it); false when there is none. */
  fireNext(): boolean {
    this.dropCleared();
    const timer = this.pop();
    if (!timer?.callback) return false;
    const callback = timer.callback;
    timer.callback = null;
    this.live--;
    this.current = Math.max(this.current, timer.at);
    callback();
    return true;
  }

  /**
   * Fires timers in order until none is pending (or time would pass `until`), letting async work settle
   * between them. `isBusy` reports real I/O still in flight (a file store's fsync), which must finish
   * before simulated time may move.
   */
  async runUntilIdle(options: { until?: number; isBusy?: () => boolean } = {}): Promise<void> {
    const until = options.until ?? Number.POSITIVE_INFINITY;
    for (;;) {
      await settle(options.isBusy);
      const next = this.nextTimerAt();
      if (next === undefined || next > until) break;
      this.fireNext();
    }
    if (Number.isFinite(until) && this.current < until) this.current = until;
  }

  /** Moves time forward by `ms`, firing every timer due on the way. */
  async advance(ms: number, isBusy?: () => boolean): Promise<void> {
    await this.runUntilIdle({ until: this.current + ms, ...(isBusy ? { isBusy } : {}) });
  }

  private dropCleared(): void {
    while (this.heap.length > 0 && this.heap[0]?.callback === null) this.pop();
  }

  private push(timer: SimTimer): void {
    const heap = this.heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): SimTimer | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: SimTimer, b: SimTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * Lets every queued promise reaction run: one macrotask turn with no I/O in flight means nothing else
 * can happen until the next timer fires (Tiller's own code schedules no immediates of its own).
 */
export async function settle(isBusy?: () => boolean): Promise<void> {
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!isBusy?.()) return;
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
  }
}
