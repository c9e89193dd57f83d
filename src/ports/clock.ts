/**
 * The clock port. Every timer in Tiller (model delays, tool durations, debounce windows, lane waits and
 * timeouts, heartbeats) goes through a Clock, so a scenario runs on a simulated clock deterministically.
 *
 * @example
 * ```ts
 * import { SimulatedClock } from "tiller-gateway";
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
export type TimerHandle = object;

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

/** An adapter call that did not settle within its deadline. */
export class DeadlineError extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "DeadlineError";
  }
}

/**
 * Settles like `work`, or rejects with {@link DeadlineError} once `ms` pass on `clock` first: an adapter
 * that never answers (a hung channel, a stuck tool) must not hold a session forever. `work` itself is
 * not stopped; the caller decides what a missed deadline means.
 *
 * @example
 * ```ts
 * const receipt = await withDeadline(clock, channel.send(message), 30_000);
 * ```
 */
export function withDeadline<T>(
  clock: Clock,
  work: Promise<T> | T,
  ms: number,
  signal?: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // Whoever waits is gone (its actor stopped): the deadline goes too, and nothing fires later.
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const settle = () => {
      clock.clearTimeout(handle);
      signal?.removeEventListener("abort", onAbort);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      reject(new DeadlineError(ms));
    }, ms);
    if (signal?.aborted) {
      onAbort();
      return;
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(work).then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}
