import type { SimulatedClock } from "../adapters/simulated-clock.js";
import type { Clock, TimerHandle } from "../ports/clock.js";
import type { TranscriptStore } from "../ports/store.js";

/**
 * The store as one process sees it: once the process is killed, nothing it still had in flight reaches
 * the store (a call after the kill never settles), as after kill -9.
 */
export function fenced(store: TranscriptStore, scope: ScopedClock): TranscriptStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function" || key === "close") return value;
      return (...args: unknown[]) => {
        if (!scope.isAlive) return new Promise(() => {});
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Promise
          ? result.then((settled) => (scope.isAlive ? settled : new Promise(() => {})))
          : result;
      };
    },
  });
}

/**
 * One process's view of the shared simulated clock. Killing it drops every timer it set, as a
 * process death would; the next process gets a fresh scope on the same timeline.
 */
export class ScopedClock implements Clock {
  private alive = true;
  private readonly timers = new Set<TimerHandle>();

  constructor(private readonly inner: SimulatedClock) {}

  get isAlive(): boolean {
    return this.alive;
  }

  now(): number {
    return this.inner.now();
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    if (!this.alive) return { __timer: null };
    const handle = this.inner.setTimeout(() => {
      this.timers.delete(handle);
      if (this.alive) callback();
    }, ms);
    this.timers.add(handle);
    return handle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle);
    this.inner.clearTimeout(handle);
  }

  kill(): void {
    this.alive = false;
    for (const handle of this.timers) this.inner.clearTimeout(handle);
    this.timers.clear();
  }
}
