/**
 * Pending commitments ordered by due time: a binary min-heap of (dueAt, id) with lazy removal, so a
 * heartbeat tick costs O(due · log n) whatever the number pending, and a rescheduled or ended
 * commitment costs O(log n). Removed and superseded entries stay in the heap until they surface; the
 * heap is rebuilt when they outnumber the live ones.
 *
 * @example
 * ```ts
 * const index = new DueIndex();
 * index.schedule("c1", 1_000);
 * index.takeDue(2_000, 3, () => true); // ["c1"]
 * ```
 */
export class DueIndex {
  private times: number[] = [];
  private ids: string[] = [];
  /** The due time each live id is scheduled at: a heap entry that disagrees is stale. */
  private readonly live = new Map<string, number>();

  get size(): number {
    return this.live.size;
  }

  has(id: string): boolean {
    return this.live.has(id);
  }

  dueAt(id: string): number | undefined {
    return this.live.get(id);
  }

  /** Adds or moves `id` to `dueAt`. */
  schedule(id: string, dueAt: number): void {
    if (this.live.get(id) === dueAt) return;
    this.live.set(id, dueAt);
    this.push(dueAt, id);
    if (this.times.length > 2 * this.live.size + 64) this.rebuild();
  }

  remove(id: string): void {
    this.live.delete(id);
  }

  /** Earliest due time, undefined when empty. */
  nextDueAt(): number | undefined {
    this.dropStale();
    return this.times[0];
  }

  /**
   * Takes (removes) up to `limit` ids due at `now` or earlier that `accept` takes, earliest first.
   * Refused ones stay scheduled as they were; at most `limit × 8 + 8` due entries are looked at.
   */
  takeDue(now: number, limit: number, accept: (id: string) => boolean): string[] {
    const taken: string[] = [];
    const refused: Array<[number, string]> = [];
    let looked = 0;
    const budget = limit * 8 + 8;
    while (taken.length < limit && looked < budget) {
      this.dropStale();
      const time = this.times[0];
      if (time === undefined || time > now) break;
      const id = this.ids[0]!;
      this.pop();
      looked++;
      if (accept(id)) {
        this.live.delete(id);
        taken.push(id);
      } else refused.push([time, id]);
    }
    for (const [time, id] of refused) this.push(time, id);
    return taken;
  }

  private dropStale(): void {
    while (this.times.length > 0 && this.live.get(this.ids[0]!) !== this.times[0]) this.pop();
  }

  private rebuild(): void {
    const entries = [...this.live].sort((a, b) => a[1] - b[1]);
    this.ids = entries.map(([id]) => id);
    this.times = entries.map(([, time]) => time);
  }

  private push(time: number, id: string): void {
    const { times, ids } = this;
    let i = times.length;
    times.push(time);
    ids.push(id);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent]! <= time) break;
      times[i] = times[parent]!;
      ids[i] = ids[parent]!;
      i = parent;
    }
    times[i] = time;
    ids[i] = id;
  }

  private pop(): void {
    const { times, ids } = this;
    const lastTime = times.pop()!;
    const lastId = ids.pop()!;
    const n = times.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && times[right]! < times[left]! ? right : left;
      if (times[child]! >= lastTime) break;
      times[i] = times[child]!;
      ids[i] = ids[child]!;
      i = child;
    }
    times[i] = lastTime;
    ids[i] = lastId;
  }
}
