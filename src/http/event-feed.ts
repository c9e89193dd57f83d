import { nanoid } from "nanoid";
import type { TillerEvent } from "../events.js";

/**
 * The gateway's event stream with ids, kept for replay: the last `capacity` events in a ring, each
 * with an id `<boot>.<seq>` (the boot part changes with every process, so an id from before a restart
 * replays nothing: events, unlike deliveries, are not stored).
 */
export class EventFeed {
  readonly boot = nanoid(6);
  private readonly ring: Array<TillerEvent | undefined>;
  private next = 0;
  private readonly listeners = new Set<() => void>();

  constructor(readonly capacity = 4096) {
    this.ring = new Array(capacity);
  }

  /** The listener to give `gateway.subscribe`. */
  readonly push = (event: TillerEvent): void => {
    this.ring[this.next % this.capacity] = event;
    this.next++;
    for (const listener of this.listeners) listener();
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
    return this.listeners.size;
  }

  onEvent(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
