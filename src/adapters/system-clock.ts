import type { Clock, TimerHandle } from "../ports/clock.js";

const MAX_DELAY = 2 ** 31 - 1;

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
    const handle: { timer: NodeJS.Timeout | null } = { timer: null };
    const arm = (remaining: number) => {
      // Node fires delays above 2^31-1 ms after 1 ms; long waits are chained instead.
      const step = Math.min(Math.max(0, remaining), MAX_DELAY);
      handle.timer = setTimeout(
        () => (remaining > MAX_DELAY ? arm(remaining - MAX_DELAY) : callback()),
        step,
      );
    };
    arm(ms);
    return handle;
  }

  clearTimeout(handle: TimerHandle): void {
    const timer = (handle as { timer: NodeJS.Timeout | null }).timer;
    if (timer) clearTimeout(timer);
  }
}
