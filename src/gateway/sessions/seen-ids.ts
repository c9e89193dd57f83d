/**
 * The message ids a session accepted within the dedupe window, with their arrival times, in the order
 * they were first set: what a `Map<string, number>` gives, in a third of its memory for the usual idle
 * session (one or two ids). The gateway keeps one per session it has seen, and a `Map` costs ~200 bytes
 * even for one entry; here the oldest id lives in fields of its own and only the others in a `Map`.
 *
 * @example
 * ```ts
 * const seen = new SeenIds();
 * seen.set("m1", 1_000);
 * seen.has("m1"); // true
 * seen.prune(700_000, 600_000); // m1 arrived more than 600 s before: forgotten
 * seen.has("m1"); // false
 * ```
 */
export class SeenIds implements Iterable<[string, number]> {
  /** The oldest id (first set), or undefined when there is none. */
  private first: string | undefined = undefined;
  private firstAt = 0;
  /** The ids after `first`, in the order they were set; undefined while there are none. */
  private more: Map<string, number> | undefined = undefined;

  /** A set holding `pairs` in their order (a later pair for the same id updates its time). */
  static from(pairs: Iterable<readonly [string, number]>): SeenIds {
    const seen = new SeenIds();
    for (const [id, at] of pairs) seen.set(id, at);
    return seen;
  }

  get size(): number {
    return (this.first === undefined ? 0 : 1) + (this.more?.size ?? 0);
  }

  has(id: string): boolean {
    return this.first === id || this.more?.has(id) === true;
  }

  /** Remembers `id` as arrived at `at`; a known id keeps its place (as `Map.set` does) and takes `at`. */
  set(id: string, at: number): this {
    if (this.first === id) this.firstAt = at;
    else if (this.first === undefined) {
      this.first = id;
      this.firstAt = at;
    } else {
      this.more ??= new Map();
      this.more.set(id, at);
    }
    return this;
  }

  /** Forgets `id`; true when it was remembered. */
  delete(id: string): boolean {
    if (this.first !== id) {
      const deleted = this.more?.delete(id) === true;
      if (this.more?.size === 0) this.more = undefined;
      return deleted;
    }
    this.first = undefined;
    this.promote();
    return true;
  }

  /**
   * Forgets the ids that arrived more than `windowMs` before `now`, from the oldest on, stopping at the
   * first one inside the window (ids arrive in time order).
   */
  prune(now: number, windowMs: number): void {
    while (this.first !== undefined && !(now - this.firstAt <= windowMs)) {
      this.first = undefined;
      this.promote();
    }
  }

  *[Symbol.iterator](): Iterator<[string, number]> {
    if (this.first !== undefined) yield [this.first, this.firstAt];
    if (this.more) yield* this.more;
  }

  /** The oldest of `more` becomes `first`, which is empty: the order stays that of the sets. */
  private promote(): void {
    const more = this.more;
    if (!more) return;
    const next = more.entries().next();
    if (next.done) {
      this.more = undefined;
      return;
    }
    const [id, at] = next.value;
    more.delete(id);
    this.first = id;
    this.firstAt = at;
    if (more.size === 0) this.more = undefined;
  }
}
