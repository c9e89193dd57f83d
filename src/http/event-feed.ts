import { nanoid } from "nanoid";
import type { TillerEvent } from "../events.js";

/**
 * Where a stream's frames go: `write` returns false once the stream's send buffer is full (the
 * socket's high-water mark), and `onDrain` fires once it has room again.
 */
export interface EventSink {
  write(chunk: string): boolean;
  onDrain(callback: () => void): void;
}

/**
 * The streams that want the same events: every session's or one session's, every type or only the
 * types named (`types`, sorted, is also the group's key among its session's groups).
 */
interface Group {
  readonly session: string | undefined;
  readonly types: ReadonlySet<string> | undefined;
  readonly key: string;
  /** Events this group was offered since it was made (a stalled stream's gap is a difference of two). */
  count: number;
  readonly active: Set<Subscriber>;
  readonly stalled: Set<Subscriber>;
  /** Frames pushed since the last flush, written to every active stream as one chunk. */
  pending: string[];
}

interface Subscriber {
  readonly sink: EventSink;
  readonly group: Group;
  /** `group.count` when the stream stalled: everything offered after it was dropped for this stream. */
  stalledAt: number;
  closed: boolean;
}

/**
 * The gateway's event stream with ids, kept for replay and fanned out to the open event streams:
 * the last `capacity` events in a ring, each with an id `<boot>.<seq>` (the boot part changes with
 * every process, so an id from before a restart replays nothing: events, unlike deliveries, are not
 * stored).
 *
 * The fan-out costs the same per event whatever the number of streams: an event is serialized once
 * (and only when a stream wants it), appended to the pending batch of each group that wants it (the
 * streams of every session and of its session, with their type filters), and
 * the batches are written once per turn of the event loop, each as one chunk, to the streams of the
 * group whose buffers have room. A stream whose buffer is full is set aside and costs nothing until
 * its socket drains; it then gets an `event: gap` with how many events it missed, and goes on live.
 * A group goes away with its last stream.
 *
 * @example
 * ```ts
 * const feed = new EventFeed(4096);
 * gateway.subscribe(feed.push);
 * const unsubscribe = feed.subscribe({ write: (chunk) => res.write(chunk), onDrain: (f) => res.once("drain", f) }, "web:1");
 * ```
 */
export class EventFeed {
  readonly boot = nanoid(6);
  private readonly ring: Array<TillerEvent | undefined>;
  private readonly frames: Array<string | undefined>;
  private next = 0;
  /** Groups of streams following every session, by type filter ("" for every type). */
  private readonly wide = new Map<string, Group>();
  /** Groups of streams following one session, by session, then by type filter. */
  private readonly sessions = new Map<string, Map<string, Group>>();
  private readonly dirty = new Set<Group>();
  private scheduled = false;
  private subscribers = 0;

  constructor(readonly capacity = 4096) {
    this.ring = new Array(capacity);
    this.frames = new Array(capacity);
  }

  /** The listener to give `gateway.subscribe`. */
  readonly push = (event: TillerEvent): void => {
    const seq = this.next++;
    const slot = seq % this.capacity;
    this.ring[slot] = event;
    this.frames[slot] = undefined;
    if (this.wide.size > 0) for (const group of this.wide.values()) this.offer(group, seq, event.type);
    if (event.session !== undefined && this.sessions.size > 0) {
      const groups = this.sessions.get(event.session);
      if (groups) for (const group of groups.values()) this.offer(group, seq, event.type);
    }
  };

  /** Sequence number the next event will get. */
  get nextSeq(): number {
    return this.next;
  }

  /** The oldest sequence number still held. */
  get firstSeq(): number {
    return Math.max(0, this.next - this.capacity);
  }

  idOf(seq: number): string {
    return `${this.boot}.${seq}`;
  }

  /** The sequence number just after an event id of this process, or undefined for any other id. */
  after(id: string): number | undefined {
    const [boot, seq] = id.split(".");
    const n = Number(seq);
    if (boot !== this.boot || !Number.isInteger(n) || n < 0 || n >= this.next) return undefined;
    return n + 1;
  }

  /** The event at `seq`, or undefined once it has left the ring. */
  at(seq: number): TillerEvent | undefined {
    return seq >= this.firstSeq && seq < this.next ? this.ring[seq % this.capacity] : undefined;
  }

  /**
   * The session's newest `limit` events still held, oldest first, each with its id (what a page shows
   * of a session's recent past when it opens; the live stream goes on after the last id).
   */
  recent(session: string, limit: number): Array<{ id: string; event: TillerEvent }> {
    const found: Array<{ id: string; event: TillerEvent }> = [];
    for (let seq = this.next - 1; seq >= this.firstSeq && found.length < limit; seq--) {
      const event = this.ring[seq % this.capacity]!;
      if (event.session === session) found.push({ id: this.idOf(seq), event });
    }
    return found.reverse();
  }

  /** Open event streams. */
  get listenerCount(): number {
    return this.subscribers;
  }

  /** Groups of streams held (one per followed session and type filter, and per filter of every session's). */
  get groupCount(): number {
    let count = this.wide.size;
    for (const groups of this.sessions.values()) count += groups.size;
    return count;
  }

  /**
   * Starts a stream: the events after the id `after` still held (a `gap` first if some left the
   * ring), then every new one, of every session or of `session` only, of every type or of `types`
   * only (names of events: a caller checks them, see EVENT_TYPES). Returns the unsubscribe.
   */
  subscribe(sink: EventSink, session?: string, after?: string, types?: Iterable<string>): () => void {
    // Events pushed this turn are in the pending batches: write them first, so the replay below
    // and the live stream meet without a hole or a repeat.
    this.flush();
    const group = this.groupOf(session, types === undefined ? undefined : new Set(types));
    const subscriber: Subscriber = { sink, group, stalledAt: 0, closed: false };
    this.subscribers++;
    const from = after === undefined ? undefined : this.after(after);
    const full = from === undefined ? false : !this.replay(subscriber, from);
    if (full) group.stalled.add(subscriber);
    else group.active.add(subscriber);
    return () => this.unsubscribe(subscriber);
  }

  private groupOf(session: string | undefined, types: ReadonlySet<string> | undefined): Group {
    const key = types === undefined ? "" : [...types].sort().join(",");
    let groups = session === undefined ? this.wide : this.sessions.get(session);
    if (!groups) {
      groups = new Map();
      this.sessions.set(session!, groups);
    }
    let group = groups.get(key);
    if (!group) {
      group = { session, types, key, count: 0, active: new Set(), stalled: new Set(), pending: [] };
      groups.set(key, group);
    }
    return group;
  }

  private unsubscribe(subscriber: Subscriber): void {
    if (subscriber.closed) return;
    subscriber.closed = true;
    this.subscribers--;
    const { group } = subscriber;
    group.active.delete(subscriber);
    group.stalled.delete(subscriber);
    if (group.active.size + group.stalled.size > 0) return;
    this.dirty.delete(group);
    if (group.session === undefined) {
      this.wide.delete(group.key);
      return;
    }
    const groups = this.sessions.get(group.session)!;
    groups.delete(group.key);
    if (groups.size === 0) this.sessions.delete(group.session);
  }

  /** Writes the held events from `from` that the stream wants; false when its buffer filled. */
  private replay(subscriber: Subscriber, from: number): boolean {
    const { group } = subscriber;
    let start = from;
    if (start < this.firstSeq) {
      // Left the ring: counted over every session and type (for a filtered stream, an upper bound).
      subscriber.sink.write(gapFrame(this.firstSeq - start));
      start = this.firstSeq;
    }
    const wanted: number[] = [];
    for (let seq = start; seq < this.next; seq++) {
      const event = this.ring[seq % this.capacity]!;
      if (group.session !== undefined && event.session !== group.session) continue;
      if (group.types === undefined || group.types.has(event.type)) wanted.push(seq);
    }
    for (let i = 0; i < wanted.length; i++) {
      if (!subscriber.sink.write(this.frameOf(wanted[i]!))) {
        this.stall(subscriber, group.count - (wanted.length - i - 1));
        return false;
      }
    }
    return true;
  }

  private offer(group: Group, seq: number, type: string): void {
    if (group.types !== undefined && !group.types.has(type)) return;
    group.count++;
    if (group.active.size === 0) return;
    group.pending.push(this.frameOf(seq));
    this.dirty.add(group);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes each group's pending batch, once, to each of its streams that has room. */
  private flush(): void {
    this.scheduled = false;
    for (const group of this.dirty) {
      const chunk = group.pending.join("");
      group.pending = [];
      for (const subscriber of group.active) {
        if (!subscriber.sink.write(chunk)) this.stall(subscriber, group.count);
      }
    }
    this.dirty.clear();
  }

  private stall(subscriber: Subscriber, stalledAt: number): void {
    const { group } = subscriber;
    subscriber.stalledAt = stalledAt;
    group.active.delete(subscriber);
    group.stalled.add(subscriber);
    subscriber.sink.onDrain(() => this.resume(subscriber));
  }

  private resume(subscriber: Subscriber): void {
    if (subscriber.closed) return;
    const { group } = subscriber;
    // Whatever is pending for the group is not counted as dropped: the next flush writes it here too.
    const dropped = group.count - group.pending.length - subscriber.stalledAt;
    group.stalled.delete(subscriber);
    if (dropped > 0 && !subscriber.sink.write(gapFrame(dropped))) {
      this.stall(subscriber, group.count - group.pending.length);
      return;
    }
    group.active.add(subscriber);
  }

  private frameOf(seq: number): string {
    const slot = seq % this.capacity;
    let frame = this.frames[slot];
    if (frame === undefined) {
      const event = this.ring[slot]!;
      frame = `id: ${this.idOf(seq)}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
      this.frames[slot] = frame;
    }
    return frame;
  }
}

/**
 * `event: gap`, data `{ dropped }`: how many events this stream missed. It has no `id:`, so a client
 * keeps the id of the last event it got, and reconnecting with it replays what the ring still holds.
 */
function gapFrame(dropped: number): string {
  return `event: gap\ndata: ${JSON.stringify({ dropped })}\n\n`;
}
