import type { TranscriptStore } from "../../ports/store.js";

/**
 * Numbers the subagent sessions of each parent (`<parent>:sub:<n>`) so that a key is never reused,
 * across restarts too: the first child of a parent in a process counts on from the highest `n` the
 * store already has a session for. A child's session is in the store from its accepted trigger on (its
 * saved state holds the task), so every number handed out before a crash is seen after it. In a
 * cluster, a parent may have run on another process since this one last numbered its children: taking
 * the parent's session (over) calls {@link SubagentNumbers.forget}, and its next child counts on from a
 * fresh listing of that parent's children only.
 *
 * @example
 * ```ts
 * const numbers = new SubagentNumbers(store);
 * await numbers.next("t:1"); // "t:1:sub:1" in a fresh store; "t:1:sub:4" after a process made three
 * ```
 */
export class SubagentNumbers {
  private readonly highest = new Map<string, number>();
  private stored: Promise<string[]> | undefined;
  /** Parents whose children another process may have made since the shared listing was taken. */
  private readonly stale = new Set<string>();

  constructor(private readonly store: Pick<TranscriptStore, "sessions">) {}

  async next(parent: string): Promise<string> {
    if (!this.highest.has(parent)) {
      // One listing per process, shared by every parent; numbers handed out since are kept here. A
      // parent taken over from another process lists its own children again (only those).
      const prefix = `${parent}:sub:`;
      let keys: string[];
      if (this.stale.has(parent)) keys = await this.store.sessions(prefix);
      else {
        this.stored ??= this.store.sessions().catch(() => []);
        keys = await this.stored;
      }
      this.stale.delete(parent);
      if (!this.highest.has(parent)) this.highest.set(parent, highestChild(keys, parent));
    }
    const n = this.highest.get(parent)! + 1;
    this.highest.set(parent, n);
    return `${parent}:sub:${n}`;
  }

  /** Another process may have made children of `parent` since: its next number comes from the store. */
  forget(parent: string): void {
    this.highest.delete(parent);
    // Before the shared listing is taken, it will be fresh for this parent anyway.
    if (this.stored === undefined) return;
    this.stale.add(parent);
    // Many parents taken over: one fresh listing for all of them costs less than remembering each.
    if (this.stale.size > MAX_STALE) {
      this.stored = undefined;
      this.stale.clear();
    }
  }
}

const MAX_STALE = 10_000;

/** The highest `n` among `<parent>:sub:<n>` keys (0 when none). */
function highestChild(keys: readonly string[], parent: string): number {
  const prefix = `${parent}:sub:`;
  let highest = 0;
  for (const key of keys) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    if (/^\d+$/.test(rest)) highest = Math.max(highest, Number(rest));
  }
  return highest;
}
