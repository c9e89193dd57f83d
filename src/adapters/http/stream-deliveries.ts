import type { DeliveryRecord } from "./delivery-log.js";
import type { SseStream } from "./sse-stream.js";
import type { WebChannel } from "./web-channel.js";

/**
 * Streams a session's deliveries: first those after `after` (a delivery's `messageId`; all of them
 * when it is absent or unknown, so a client never misses one), then each new one as it is stored. The
 * stream reads from the stored list with a cursor, so a slow client waits on its socket, never on a
 * growing buffer.
 */
export async function streamDeliveries(
  sse: SseStream,
  web: WebChannel,
  session: string,
  after: string | undefined,
): Promise<void> {
  let records: readonly DeliveryRecord[] | undefined;
  let cursor = 0;
  let waiting = false;
  const pump = (): void => {
    if (!records || waiting || sse.isClosed) return;
    while (cursor < records.length) {
      const record = records[cursor++]!;
      const ok = sse.send({
        id: record.messageId,
        event: "delivery",
        data: {
          messageId: record.messageId,
          kind: record.kind,
          text: record.text,
          ...(record.runId !== undefined ? { runId: record.runId } : {}),
          at: record.at,
        },
      });
      if (!ok) {
        waiting = true;
        sse.onDrain(() => {
          waiting = false;
          pump();
        });
        return;
      }
    }
  };
  // Subscribed before the read, so a delivery stored meanwhile is not missed.
  sse.onClose(web.subscribe(session, pump));
  records = await web.log.read(session);
  if (after !== undefined) {
    const index = records.findLastIndex((record) => record.messageId === after);
    cursor = index + 1;
  }
  pump();
}
