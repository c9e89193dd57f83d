import type { EventFeed } from "./event-feed.js";
import type { SseStream } from "./sse-stream.js";

/**
 * Streams the gateway's events (optionally one session's): from just after `after` (an event id of
 * this process) when given, else from now. A client so slow that the ring moved past it gets a comment
 * and the end of the stream, and reconnects.
 */
export function streamEvents(
  sse: SseStream,
  feed: EventFeed,
  session: string | undefined,
  after: string | undefined,
): void {
  let cursor = (after !== undefined ? feed.after(after) : undefined) ?? feed.nextSeq;
  let waiting = false;
  const pump = (): void => {
    if (waiting || sse.isClosed) return;
    while (cursor < feed.nextSeq) {
      if (cursor < feed.firstSeq) {
        sse.comment("events were missed: reconnect");
        sse.end();
        return;
      }
      const seq = cursor++;
      const event = feed.at(seq)!;
      if (session !== undefined && event.session !== session) continue;
      if (!sse.send({ id: feed.idOf(seq), event: event.type, data: event })) {
        waiting = true;
        sse.onDrain(() => {
          waiting = false;
          pump();
        });
        return;
      }
    }
  };
  sse.onClose(feed.onEvent(pump));
  pump();
}
