import { describe, expect, it } from "vitest";
import { WebChannel } from "../../src/adapters/channels/web-channel.js";
import { EventFeed } from "../../src/http/event-feed.js";
import type { SseMessage, SseStream } from "../../src/http/sse-stream.js";
import { streamDeliveries } from "../../src/http/stream-deliveries.js";
import { streamEvents } from "../../src/http/stream-events.js";
import { MemoryDeliveryLog } from "../../src/ports/delivery-log.js";

/** A stream whose socket takes `room` frames, then is full until `drain()`. */
function fakeStream(room: number) {
  const sent: SseMessage[] = [];
  const written: string[] = [];
  let drainers: Array<() => void> = [];
  let closers: Array<() => void> = [];
  let free = room;
  let closed = false;
  const stream = {
    get isClosed() {
      return closed;
    },
    send(message: SseMessage) {
      sent.push(message);
      return --free > 0;
    },
    write(chunk: string) {
      written.push(chunk);
      return --free > 0;
    },
    comment() {},
    onDrain(callback: () => void) {
      drainers.push(callback);
    },
    onClose(callback: () => void) {
      closers.push(callback);
    },
    end() {
      closed = true;
      for (const closer of closers) closer();
      closers = [];
    },
  };
  return {
    stream: stream as unknown as SseStream,
    sent,
    written,
    drain(more: number) {
      free = more;
      const now = drainers;
      drainers = [];
      for (const drainer of now) drainer();
    },
    close: () => stream.end(),
    get closed() {
      return closed;
    },
  };
}

/** Lets pending promise callbacks run (the memory log's reads resolve within them). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("a slow stream client", () => {
  it("holds a cursor into the deliveries: nothing is written past a full socket, nothing is skipped", async () => {
    const web = new WebChannel(new MemoryDeliveryLog());
    for (let i = 0; i < 10; i++) await web.send({ session: "s", text: `m${i}`, kind: "reply" });
    const fake = fakeStream(3);
    await streamDeliveries(fake.stream, web, "s", undefined);
    expect(fake.sent).toHaveLength(3);
    await web.send({ session: "s", text: "m10", kind: "reply" });
    expect(fake.sent).toHaveLength(3); // still full: the new one waits in the log, not in a buffer
    fake.drain(100);
    await settled(); // the stream reads the log again (an async read) once the batch is written
    expect(fake.sent.map((message) => (message.data as { text: string }).text)).toEqual(
      Array.from({ length: 11 }, (_, i) => `m${i}`),
    );
    fake.close();
    expect(web.listenerCount("s")).toBe(0);
  });

  it("of the events stream keeps its send buffer: past it, events are dropped and counted in a gap", async () => {
    const feed = new EventFeed(64);
    const fake = fakeStream(1);
    streamEvents(fake.stream, feed, undefined, undefined);
    for (let i = 0; i < 20; i++) feed.push({ at: i, type: "lane.resumed" });
    await settled();
    expect(fake.written).toHaveLength(1); // the turn's 20 events in one write; then the buffer is full
    expect(fake.written[0]!.match(/event: lane.resumed/g)).toHaveLength(20);
    for (let i = 0; i < 5; i++) feed.push({ at: i, type: "lane.resumed" });
    await settled();
    expect(fake.written).toHaveLength(1); // nothing is written, nor buffered, for a full stream
    fake.drain(100);
    expect(fake.written[1]).toBe('event: gap\ndata: {"dropped":5}\n\n');
    feed.push({ at: 99, type: "lane.resumed" });
    await settled();
    expect(fake.written[2]).toContain(`id: ${feed.idOf(25)}\n`);
    fake.close();
    expect(feed.listenerCount).toBe(0);
  });
});
