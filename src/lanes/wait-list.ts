/**
 * Intrusive doubly linked lists: O(1) push, shift and removal of any node, with no copying as the list
 * grows. A node is in at most one list at a time, and it does not record which: the caller knows (an
 * entry's state says where it waits), and two links are all a waiting entry carries for it.
 */
export interface QueueLinks {
  qPrev: QueueLinks | null;
  qNext: QueueLinks | null;
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

  /**
   * Removes `node` if it is in this list or in none; returns whether it was in this one. A node in
   * another list must not be passed (only a head of another list is recognized as not in this one).
   */
  remove(node: T): boolean {
    if (node.qPrev === null && this.head !== node) return false;
    if (node.qPrev) node.qPrev.qNext = node.qNext;
    else this.head = node.qNext as T | null;
    if (node.qNext) node.qNext.qPrev = node.qPrev;
    else this.tail = node.qPrev as T | null;
    node.qPrev = null;
    node.qNext = null;
    this.count--;
    return true;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let node = this.head; node; node = node.qNext as T | null) yield node;
  }
}

/** What a priority list needs of its nodes: a base level, an arrival number, and when it began to wait. */
export interface Waiting extends QueueLinks {
  readonly priorityLevel: number;
  readonly id: number;
  /** When the node entered this list (set by `push`), on the clock aging is read from. */
  waitSince: number;
}

/** Aging: a waiting node rises one priority level for every `ms` it waits (0 turns it off). */
export interface Aging {
  ms: number;
  now(): number;
}

/**
 * Three FIFO lists, one per base priority level (0 = foreground first). With aging, a node's effective
 * level is its base level minus one per `aging.ms` waited; the next node is the head with the best
 * effective level, then the earliest arrival. Each list is in arrival order, so its head has waited
 * longest and is always its best candidate: choosing costs three comparisons whatever the length.
 */
export class PriorityWaitList<T extends Waiting> {
  private readonly levels: [WaitList<T>, WaitList<T>, WaitList<T>] = [
    new WaitList(),
    new WaitList(),
    new WaitList(),
  ];

  constructor(private readonly aging?: Aging) {}

  get size(): number {
    return this.levels[0].size + this.levels[1].size + this.levels[2].size;
  }

  /** Appends `node`; `now` (the aging clock's time, when the caller has just read it) saves a read. */
  push(node: T, now?: number): void {
    node.waitSince = this.aging ? (now ?? this.aging.now()) : 0;
    this.levels[node.priorityLevel as 0 | 1 | 2].push(node);
  }

  /** The node's level now: its base level, raised by the time it has waited. */
  effectiveLevel(node: T, now = this.aging?.now() ?? 0): number {
    const ms = this.aging?.ms ?? 0;
    if (ms <= 0) return node.priorityLevel;
    return Math.max(0, node.priorityLevel - Math.floor((now - node.waitSince) / ms));
  }

  /** The node that starts next (without removing it). */
  peek(): T | null {
    const a = this.levels[0].first;
    const b = this.levels[1].first;
    const c = this.levels[2].first;
    // One level waiting (the usual case: one priority in use): its head is next whatever has aged, and
    // the clock is not read. Picking among heads allocates nothing: this runs once per task.
    if ((a ? 1 : 0) + (b ? 1 : 0) + (c ? 1 : 0) < 2 || !this.aging || this.aging.ms <= 0) return a ?? b ?? c;
    const now = this.aging.now();
    let best: T | null = null;
    let bestLevel = 3;
    for (let level = 0; level < 3; level++) {
      const head = this.levels[level as 0 | 1 | 2].first;
      if (!head) continue;
      const effective = this.effectiveLevel(head, now);
      if (effective < bestLevel || (effective === bestLevel && best !== null && head.id < best.id)) {
        best = head;
        bestLevel = effective;
      }
    }
    return best;
  }

  shift(): T | null {
    const node = this.peek();
    if (node) this.remove(node);
    return node;
  }

  /** Removes `node`, which is in this list or in none (see `WaitList.remove`). */
  remove(node: T): boolean {
    return this.levels[node.priorityLevel as 0 | 1 | 2].remove(node);
  }

  /** Entries by base priority, then arrival (the start order when nothing has aged). */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const level of this.levels) yield* level;
  }

  /**
   * Number of entries that would start before `node` (it must be in this list) by base priority; aging
   * can only move `node` up. `memo` remembers each node's position within its level, so counting many
   * nodes of an unchanged list costs O(n) in all.
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
