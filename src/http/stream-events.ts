import type { EventFeed } from "./event-feed.js";
import type { SseStream } from "./sse-stream.js";

/**
 * Streams the gateway's events (optionally one session's, optionally of the named `types` only): from
 * just after `after` (an event id of this process) when given, else from now. A client that does not read keeps at most its send buffer;
 * past it, events are dropped for that client and it is told how many by an `event: gap`.
 */
export function streamEvents(
  sse: SseStream,
  feed: EventFeed,
  session: string | undefined,
  after: string | undefined,
  types?: ReadonlySet<string>,
): void {
  if (sse.isClosed) return;
  sse.onClose(feed.subscribe(sse, session, after, types));
}
