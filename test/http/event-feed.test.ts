import { describe, expect, it } from "vitest";
import { EventFeed, type EventSink } from "../../src/http/event-feed.js";

// The events fan-out: one serialization per event, writes only to the streams that want the event
// and have room, a gap count for the others, nothing kept for a closed stream.

/** A sink with room for `room` writes; `drain()` gives it more. Counts every write. */
function sink(room = Number.POSITIVE_INFINITY) {
  const chunks: string[] = [];
  let free = room;
  let drainer: (() => void) | undefined;
  const target: EventSink = {
    write(chunk) {
      chunks.push(chunk);
      return --free > 0;
    },
    onDrain(callback) {
      drainer = callback;
    },
  };
  return {
    target,
    chunks,
    frames: () => chunks.join("").split("\n\n").filter(Boolean),
    drain(more = Number.POSITIVE_INFINITY) {
      free = more;
      const callback = drainer;
      drainer = undefined;
      callback?.();
    },
  };
}

/** How many times `work` called JSON.stringify. */
function serializations(work: () => void): number {
  const spy = JSON.stringify;
  let serialized = 0;
  JSON.stringify = ((...args: Parameters<typeof spy>) => {
    serialized++;
    return spy(...args);
  }) as typeof JSON.stringify;
  try {
    work();
  } finally {
    JSON.stringify = spy;
  }
  return serialized;
}

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));
const event = (session: string, n: number) => ({
  at: n,
  type: "run.started" as const,
  session,
  runId: `r${n}`,
});

describe("EventFeed", () => {
  it("writes an event only to the streams of its session and to unfiltered ones, one chunk per turn", async () => {
    const feed = new EventFeed(64);
    const others = Array.from({ length: 1000 }, () => sink());
    const unsubscribes = others.map((other, i) => feed.subscribe(other.target, `web:other${i}`));
    const mine = sink();
    const all = sink();
    feed.subscribe(mine.target, "web:1");
    feed.subscribe(all.target);
    for (let i = 0; i < 10; i++) feed.push(event("web:1", i) as never);
    await settled();
    expect(others.every((other) => other.chunks.length === 0)).toBe(true);
    expect(mine.chunks).toHaveLength(1);
    expect(mine.frames()).toHaveLength(10);
    expect(all.chunks).toHaveLength(1);
    // The same serialized frame went to both.
    expect(mine.chunks[0]).toBe(all.chunks[0]);
    expect(feed.groupCount).toBe(1002);
    for (const unsubscribe of unsubscribes) unsubscribe();
    expect(feed.groupCount).toBe(2);
    expect(feed.listenerCount).toBe(2);
  });

  it("sets a full stream aside: no writes while it is full, then a gap with the exact count, then live", async () => {
    const feed = new EventFeed(64);
    const slow = sink(1);
    const fast = sink();
    feed.subscribe(slow.target, "web:1");
    feed.subscribe(fast.target, "web:1");
    feed.push(event("web:1", 0) as never);
    await settled();
    for (let i = 1; i <= 7; i++) {
      feed.push(event("web:1", i) as never);
      feed.push(event("web:2", i) as never); // another session's: not counted for this stream
      await settled();
    }
    expect(slow.chunks).toHaveLength(1);
    expect(fast.frames()).toHaveLength(8);
    slow.drain();
    expect(slow.chunks[1]).toBe('event: gap\ndata: {"dropped":7}\n\n');
    feed.push(event("web:1", 8) as never);
    await settled();
    expect(slow.chunks[2]).toContain('"runId":"r8"');
  });

  it("replays after an id from the ring, filtered; an id older than the ring starts with a gap", () => {
    const feed = new EventFeed(4);
    for (let i = 0; i < 3; i++) feed.push(event(i % 2 ? "web:2" : "web:1", i) as never);
    const replay = sink();
    feed.subscribe(replay.target, "web:1", feed.idOf(0));
    expect(replay.frames()).toEqual([expect.stringContaining(`id: ${feed.idOf(2)}\n`)]);
    for (let i = 3; i < 10; i++) feed.push(event("web:1", i) as never);
    const late = sink();
    feed.subscribe(late.target, undefined, feed.idOf(2));
    const frames = late.frames();
    expect(frames[0]).toBe('event: gap\ndata: {"dropped":3}');
    expect(frames.slice(1).map((frame) => frame.split("\n")[0])).toEqual(
      [6, 7, 8, 9].map((seq) => `id: ${feed.idOf(seq)}`),
    );
  });

  it("a replay that fills the buffer counts the rest as dropped", () => {
    const feed = new EventFeed(16);
    for (let i = 0; i < 10; i++) feed.push(event("web:1", i) as never);
    const small = sink(3);
    feed.subscribe(small.target, "web:1", feed.idOf(0));
    expect(small.chunks).toHaveLength(3);
    small.drain();
    expect(small.chunks[3]).toBe('event: gap\ndata: {"dropped":6}\n\n');
  });

  it("forgets a closed stream, stalled or not, and serializes nothing without streams", async () => {
    const feed = new EventFeed(8);
    const stalled = sink(1);
    const stop = feed.subscribe(stalled.target, "web:1");
    const stopAll = feed.subscribe(sink().target);
    feed.push(event("web:1", 0) as never);
    await settled();
    stop();
    stopAll();
    expect(feed.listenerCount).toBe(0);
    expect(feed.groupCount).toBe(0);
    stalled.drain(); // a late drain of a closed stream writes nothing
    expect(stalled.chunks).toHaveLength(1);
    expect(
      serializations(() => {
        for (let i = 0; i < 100; i++) feed.push(event("web:1", i) as never);
      }),
    ).toBe(0);
  });

  it("writes a typed stream only the types it named, serializing nothing no stream wants", async () => {
    const feed = new EventFeed(64);
    const finals = sink();
    const mineFinals = sink();
    const everything = sink();
    feed.subscribe(finals.target, undefined, undefined, ["final.delivered", "turn.ended"]);
    // The same filter named in another order is the same group.
    feed.subscribe(sink().target, undefined, undefined, ["turn.ended", "final.delivered"]);
    feed.subscribe(mineFinals.target, "web:1", undefined, ["final.delivered"]);
    expect(feed.groupCount).toBe(2);
    const typed = (type: string, session: string, n: number) => ({ at: n, type, session }) as never;
    feed.push(typed("model.delta", "web:1", 0));
    feed.push(typed("final.delivered", "web:1", 1));
    feed.push(typed("turn.ended", "web:2", 2));
    feed.push(typed("final.delivered", "web:2", 3));
    await settled();
    const types = (frames: string[]) => frames.map((frame) => frame.split("\n")[1]);
    expect(types(finals.frames())).toEqual([
      "event: final.delivered",
      "event: turn.ended",
      "event: final.delivered",
    ]);
    expect(types(mineFinals.frames())).toEqual(["event: final.delivered"]);
    // A stream opened later with every type replays all four after the first id; a typed one, its types.
    const firstId = finals.frames()[0]!.split("\n")[0]!.slice(4);
    feed.subscribe(everything.target, undefined, feed.idOf(0));
    expect(types(everything.frames())).toEqual([
      "event: final.delivered",
      "event: turn.ended",
      "event: final.delivered",
    ]);
    const late = sink();
    feed.subscribe(late.target, "web:2", firstId, ["final.delivered"]);
    expect(types(late.frames())).toEqual(["event: final.delivered"]);
    // Nothing is serialized for a type only unfiltered streams would want when none is open.
    const quiet = new EventFeed(8);
    quiet.subscribe(sink().target, undefined, undefined, ["final.delivered"]);
    expect(
      serializations(() => {
        for (let i = 0; i < 100; i++) quiet.push(typed("model.delta", "web:1", i));
      }),
    ).toBe(0);
  });

  it("counts a typed stream's gap in its own events only", async () => {
    const feed = new EventFeed(64);
    const small = sink(1);
    feed.subscribe(small.target, undefined, undefined, ["final.delivered"]);
    const typed = (type: string, n: number) => ({ at: n, type, session: "web:1" }) as never;
    feed.push(typed("final.delivered", 0));
    await settled(); // fills the stream's buffer
    for (let i = 1; i <= 9; i++) feed.push(typed(i % 3 === 0 ? "final.delivered" : "model.delta", i));
    await settled();
    small.drain();
    expect(small.chunks[1]).toBe('event: gap\ndata: {"dropped":3}\n\n');
  });
});
