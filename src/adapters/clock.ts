/**
 * The clock port. Every timer in Tiller (model delays, tool durations, debounce windows, lane waits and
 * timeouts, heartbeats) goes through a Clock, so a scenario runs on a simulated clock deterministically.
 *
 * @example
 * ```ts
 * import { SimulatedClock } from "tiller";
 * const clock = new SimulatedClock();
 * clock.setTimeout(() => console.log(clock.now()), 500);
 * await clock.runUntilIdle(); // prints 500
 * ```
 */
export interface Clock {
  /** Milliseconds since the epoch (system) or since the simulation began (simulated). */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Opaque timer handle; only the clock that issued it can clear it. */
export type TimerHandle = { readonly __timer: unknown };

/** Resolves after `ms` on the given clock, or rejects with the signal's reason when it aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
