import type { TillerEvent } from "../events.js";

/** A subscriber to the gateway's event stream; it is called once per event, in order. */
export type EventListener = (event: TillerEvent) => void;
/** Fans the gateway's events out to its subscribers and keeps no history. */
export class EventHub {
  private readonly listeners = new Set<EventListener>();

  /** True when someone listens; emitters skip building events otherwise. */
  get isObserved(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: TillerEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A faulty observer must never break the decision it observes.
      }
    }
  }

  /**
   * An async iterator over events from now on: subscribed at once, so events emitted before the first
   * `next()` are kept too. Events are buffered, so a slow consumer sees every one in order; it ends
   * when `signal` aborts or the consumer stops (`break`, `return()`).
   */
  stream(signal?: AbortSignal): AsyncGenerator<TillerEvent> {
    const buffer: TillerEvent[] = [];
    let wake: (() => void) | null = null;
    const off = this.subscribe((event) => {
      buffer.push(event);
      wake?.();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener("abort", onAbort);
    async function* drain(): AsyncGenerator<TillerEvent> {
      try {
        while (!signal?.aborted) {
          const next = buffer.shift();
          if (next) {
            yield next;
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = null;
        }
      } finally {
        off();
        signal?.removeEventListener("abort", onAbort);
      }
    }
    return drain();
  }
}
