/**
 * Intrusive doubly linked lists: O(1) push, shift and removal of any node, with no copying as the list
 * grows. A node belongs to at most one list per link slot; `queue` links order a lane's waiting entries,
 * `age` links order entries by arrival for the wait-warning sweep.
 */
export interface QueueLinks {
  qPrev: QueueLinks | null;
  qNext: QueueLinks | null;
  qList: WaitList<QueueLinks> | null;
}

export class WaitList<T extends QueueLinks> {
  private head: T | null = null;
  private tail: T | null = null;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get first(): T | null {
    return this.head;
  }

  push(node: T): void {
    node.qPrev = this.tail;
    node.qNext = null;
    node.qList = this as unknown as WaitList<QueueLinks>;
    if (this.tail) this.tail.qNext = node;
    else this.head = node;
    this.tail = node;
    this.count++;
  }

  shift(): T | null {
    const node = this.head;
    if (node) this.remove(node);
    return node;
  }

  /** Removes `node` if it is in this list; returns whether it was. */
  remove(node: T): boolean {
    if (node.qList !== (this as unknown as WaitList<QueueLinks>)) return false;
    if (node.qPrev) node.qPrev.qNext = node.qNext;
    else this.head = node.qNext as T | null;
    if (node.qNext) node.qNext.qPrev = node.qPrev;
    else this.tail = node.qPrev as T | null;
    node.qPrev = null;
    node.qNext = null;
    node.qList = null;
    this.count--;
    return true;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let node = this.head; node; node = node.qNext as T | null) yield node;
  }
}

/** Three FIFO lists, one per priority level (0 = foreground first). */
export class PriorityWaitList<T extends QueueLinks & { priorityLevel: number }> {
  private readonly levels: [WaitList<T>, WaitList<T>, WaitList<T>] = [
    new WaitList(),
    new WaitList(),
    new WaitList(),
  ];

  get size(): number {
    return this.levels[0].size + this.levels[1].size + this.levels[2].size;
  }

  push(node: T): void {
    this.levels[node.priorityLevel as 0 | 1 | 2].push(node);
  }

  shift(): T | null {
    return this.levels[0].shift() ?? this.levels[1].shift() ?? this.levels[2].shift();
  }

  remove(node: T): boolean {
    return this.levels[node.priorityLevel as 0 | 1 | 2].remove(node);
  }

  /** Entries in start order: by priority, then arrival. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const level of this.levels) yield* level;
  }

  /**
   * Number of entries that would start before `node` (it must be in this list). `memo` remembers each
   * node's position within its level, so counting many nodes of an unchanged list costs O(n) in all.
   */
  countAhead(node: T, memo?: Map<QueueLinks, number>): number {
    let ahead = 0;
    for (let level = 0; level < node.priorityLevel; level++) ahead += this.levels[level as 0 | 1 | 2].size;
    let inLevel = 0;
    for (let n = node.qPrev; n; n = n.qPrev) {
      const known = memo?.get(n);
      if (known !== undefined) {
        inLevel += known + 1;
        break;
      }
      inLevel++;
    }
    memo?.set(node, inLevel);
    return ahead + inLevel;
  }
}
