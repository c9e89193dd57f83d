import { followSse } from "../../src/cli/sse-client.js";

export interface RecordedEvent {
  id?: string;
  event?: string;
  data: Record<string, unknown>;
}

/**
 * Follows an SSE endpoint over a real socket and keeps what arrives; `waitFor` resolves with the first
 * recorded event that matches (or rejects after `timeoutMs`, listing what did arrive).
 */
export class SseRecorder {
  readonly events: RecordedEvent[] = [];
  private readonly stop = new AbortController();
  private readonly waiters = new Set<() => void>();
  readonly opened: Promise<void>;
  opens = 0;

  constructor(url: string, options: { headers?: Record<string, string>; lastEventId?: string } = {}) {
    let markOpen: () => void = () => undefined;
    this.opened = new Promise((resolve) => {
      markOpen = resolve;
    });
    void followSse(url, {
      ...options,
      signal: this.stop.signal,
      retryMs: 100,
      onOpen: () => {
        this.opens++;
        markOpen();
      },
      onEvent: (message) => {
        this.events.push({
          ...(message.id !== undefined ? { id: message.id } : {}),
          ...(message.event !== undefined ? { event: message.event } : {}),
          data: JSON.parse(message.data) as Record<string, unknown>,
        });
        for (const waiter of this.waiters) waiter();
      },
    });
  }

  of(type: string): RecordedEvent[] {
    return this.events.filter((event) => event.event === type);
  }

  waitFor(predicate: (event: RecordedEvent) => boolean, timeoutMs = 20_000): Promise<RecordedEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.events.find(predicate);
        if (!found) return false;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const seen = this.events.map((event) => event.event).join(", ");
        reject(new Error(`no matching event within ${timeoutMs} ms; received: ${seen}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  close(): void {
    this.stop.abort();
  }
}
