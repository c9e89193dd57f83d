import type { WebChannel } from "../adapters/channels/web-channel.js";
import { type DeliveryRecord, deliverySeq, readDeliveriesAfter } from "../ports/delivery-log.js";
import type { SseStream } from "./sse-stream.js";

/**
 * Streams a session's deliveries: first those after `after` (a delivery's `messageId`; all of them
 * when it is absent or unknown, so a client never misses one), then each new one as it is stored, here
 * or (on a shared log) by another process. The stream reads the log after a cursor, one batch at a
 * time, and reads again only once the batch is written, so a slow client waits on its socket, never on
 * a growing buffer. A client whose cursor was pruned (it fell more than the log keeps behind) is
 * told what it missed by a `pruned` event before the oldest kept delivery.
 */
export async function streamDeliveries(
  sse: SseStream,
  web: WebChannel,
  session: string,
  after: string | undefined,
): Promise<void> {
  let cursor = after;
  let batch: readonly DeliveryRecord[] = [];
  let index = 0;
  let reading = false;
  let waiting = false;
  let stale = true;
  const pump = (): void => {
    if (waiting || sse.isClosed) return;
    while (index < batch.length) {
      const record = batch[index++]!;
      cursor = record.messageId;
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
    if (stale) void read();
  };
  const read = async (): Promise<void> => {
    if (reading || sse.isClosed) return;
    reading = true;
    stale = false;
    try {
      batch = await readDeliveriesAfter(web.log, session, cursor);
      index = 0;
      const gap = prunedBetween(cursor, batch[0]);
      if (gap) sse.send({ event: "pruned", data: gap });
    } catch {
      // Read again at the next wake-up (the next delivery; a shared log's poll), not in a loop.
      batch = [];
    } finally {
      reading = false;
    }
    pump();
  };
  const wake = (): void => {
    stale = true;
    if (!reading && index >= batch.length) pump();
  };
  // Subscribed before the first read, so a delivery stored meanwhile is not missed.
  sse.onClose(web.watch(session, wake));
  await read();
}

/**
 * The deliveries a client missed because they were pruned: those between its cursor and the first
 * one it is sent next (ids count on by one per delivery: `<seq>-<random>`). Undefined when nothing is
 * missing, or when the cursor is not a delivery id of this log's form.
 */
function prunedBetween(
  cursor: string | undefined,
  next: DeliveryRecord | undefined,
): { after: string; next: string; missed: number } | undefined {
  if (cursor === undefined || next === undefined) return undefined;
  const from = deliverySeq(cursor);
  const to = deliverySeq(next.messageId);
  if (!Number.isInteger(from) || !Number.isInteger(to) || to <= from + 1) return undefined;
  return { after: cursor, next: next.messageId, missed: to - from - 1 };
}
