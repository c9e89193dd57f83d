/**
 * A server-sent-events stream read with `fetch` rather than `EventSource`, so that it can carry the
 * `Authorization` header (docs/decisions.md). It keeps what `EventSource` gave: frames parsed by the
 * SSE rules (eventsource-parser), the last event id sent back as `Last-Event-ID` on reconnect (so a
 * replaying stream misses nothing), and reconnecting after a drop. A 401 asks for the token first.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { askForToken, authHeaders } from "./auth.js";

export interface StreamHandlers {
  onMessage(message: EventSourceMessage): void;
  /** True once the stream is open, false when it dropped (it reconnects on its own). */
  onStatus?(open: boolean): void;
}

const RETRY_MS = 1000;

/** Opens the stream at `url` (same origin); the returned function closes it for good. */
export function openStream(url: string, handlers: StreamHandlers): () => void {
  const stop = new AbortController();
  let lastEventId: string | undefined;
  void (async () => {
    while (!stop.signal.aborted) {
      try {
        const response = await fetch(url, {
          headers: {
            accept: "text/event-stream",
            ...authHeaders(),
            ...(lastEventId !== undefined ? { "last-event-id": lastEventId } : {}),
          },
          signal: stop.signal,
          cache: "no-store",
        });
        if (response.status === 401) {
          await response.body?.cancel().catch(() => undefined);
          handlers.onStatus?.(false);
          await askForToken();
          continue;
        }
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        handlers.onStatus?.(true);
        const parser = createParser({
          onEvent(message) {
            if (message.id !== undefined) lastEventId = message.id;
            handlers.onMessage(message);
          },
        });
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.feed(value);
        }
      } catch {
        // A dropped connection or a server restart: try again below.
      }
      if (stop.signal.aborted) return;
      handlers.onStatus?.(false);
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  })();
  return () => stop.abort();
}
