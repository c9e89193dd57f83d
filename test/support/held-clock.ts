import type { Clock, TimerHandle } from "../../src/ports/clock.js";

interface HeldTimer {
  callback: () => void;
  ms: number;
  real?: ReturnType<typeof setTimeout>;
}

/**
 * A clock on real time whose timers wait while it is held. A test gives it to a slow tool or a
 * streaming model and keeps the tool running (or the reply streaming) until what must happen meanwhile
 * (a steer, a `/stop`) has happened, so the outcome never depends on how fast a loaded machine is.
 * `step()` fires one waiting timer; `release()` lets every timer run on real time until `hold()`.
 */
export class HeldClock implements Clock {
  private held = true;
  private readonly waiting: HeldTimer[] = [];
  private readonly wakers = new Set<() => void>();

  now(): number {
    return Date.now();
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer: HeldTimer = { callback, ms };
    if (this.held) {
      this.waiting.push(timer);
      for (const wake of this.wakers) wake();
    } else timer.real = setTimeout(callback, ms);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    const timer = handle as HeldTimer;
    const index = this.waiting.indexOf(timer);
    if (index >= 0) this.waiting.splice(index, 1);
    if (timer.real) clearTimeout(timer.real);
  }

  /** Fires the oldest waiting timer, once one is set. */
  async step(): Promise<void> {
    while (this.waiting.length === 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.wakers.delete(wake);
          resolve();
        };
        this.wakers.add(wake);
      });
    }
    this.waiting.shift()!.callback();
  }

  /** Timers run on real time from now on: those waiting start their delay now. */
  release(): void {
    this.held = false;
    for (const timer of this.waiting.splice(0)) timer.real = setTimeout(timer.callback, timer.ms);
  }

  /** Timers set from now on wait again. */
  hold(): void {
    this.held = true;
  }
}
