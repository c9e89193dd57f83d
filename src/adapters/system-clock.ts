import type { Clock, TimerHandle } from "./clock.js";

/**
 * Wall-clock time and Node timers; the default outside scenarios.
 *
 * @example
 * ```ts
 * const clock = new SystemClock();
 * clock.setTimeout(() => console.log("later"), 10);
 * ```
 */
export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer = setTimeout(callback, Math.max(0, ms));
    // A pending timer must not keep a CLI or a test process alive on its own.
    timer.unref?.();
    return timer as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle): void {
    clearTimeout(handle as unknown as NodeJS.Timeout);
  }
}
