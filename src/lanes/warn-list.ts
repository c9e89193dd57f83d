import type { Entry } from "./entry.js";

/** Waiting entries not yet warned about, in arrival order (so sorted by wait deadline). */
export class WarnList {
  private head: Entry | null = null;
  private tail: Entry | null = null;

  get first(): Entry | null {
    return this.head;
  }

  push(entry: Entry): void {
    entry.aPrev = this.tail;
    entry.aNext = null;
    entry.aLinked = true;
    if (this.tail) this.tail.aNext = entry;
    else this.head = entry;
    this.tail = entry;
  }

  remove(entry: Entry): void {
    if (!entry.aLinked) return;
    if (entry.aPrev) entry.aPrev.aNext = entry.aNext;
    else this.head = entry.aNext;
    if (entry.aNext) entry.aNext.aPrev = entry.aPrev;
    else this.tail = entry.aPrev;
    entry.aPrev = null;
    entry.aNext = null;
    entry.aLinked = false;
  }
}
