import { createParser, type EventSourceMessage } from "eventsource-parser";

export interface SseClientOptions {
  headers?: Record<string, string>;
  /** Resume after this event id (sent as `Last-Event-ID`). */
  lastEventId?: string;
  signal: AbortSignal;
  onEvent(message: EventSourceMessage): void;
  /** Each time the stream is open (first connect and every reconnect). */
  onOpen?(): void;
  /** A connection failed or ended; it is retried after `retryMs` unless the signal aborted. */
  onDrop?(reason: string): void;
  /** @default 1000 */
  retryMs?: number;
}

/**
 * A server-sent-events client on `fetch`: parses with eventsource-parser, remembers the last event id
 * and reconnects with `Last-Event-ID`, so a stream that replays (the deliveries stream) misses
 * nothing across a dropped connection or a server restart. Resolves when the signal aborts.
 */
export async function followSse(url: string, options: SseClientOptions): Promise<void> {
  let lastEventId = options.lastEventId;
  const retryMs = options.retryMs ?? 1000;
  while (!options.signal.aborted) {
    try {
      const response = await fetch(url, {
        headers: {
          accept: "text/event-stream",
          ...options.headers,
          ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}),
        },
        signal: options.signal,
      });
      if (!response.ok || !response.body) {
        const body = await response.text().catch(() => "");
        throw new Error(`HTTP ${response.status} ${body.slice(0, 200)}`);
      }
      options.onOpen?.();
      const parser = createParser({
        onEvent(message) {
          if (message.id !== undefined) lastEventId = message.id;
          options.onEvent(message);
        },
      });
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(chunk, { stream: true }));
      }
      options.onDrop?.("the stream ended");
    } catch (error) {
      if (options.signal.aborted) return;
      options.onDrop?.(error instanceof Error ? error.message : String(error));
    }
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}
