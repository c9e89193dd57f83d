/**
 * A binary min-heap of schedules by next run time: the earliest is read in O(1), taken or added in
 * O(log n), so a tick costs O(due · log n) however many schedules wait.
 *
 * @example
 * ```ts
 * const heap = new ScheduleHeap();
 * heap.push({ id: "b", at: 20 });
 * heap.push({ id: "a", at: 10 });
 * heap.pop()?.id; // "a"
 * ```
 */
export class ScheduleHeap {
  private readonly items: Array<{ id: string; at: number }> = [];

  get size(): number {
    return this.items.length;
  }

  peek(): { id: string; at: number } | undefined {
    return this.items[0];
  }

  push(item: { id: string; at: number }): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= item.at) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = item;
  }

  pop(): { id: string; at: number } | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]!.at < items[left]!.at ? right : left;
      if (items[child]!.at >= last.at) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}
