/**
 * Runs work for one key one step at a time, in call order, while different keys run side by side.
 * A step that fails does not stop the next one. The map forgets a key once its queue is empty, so a
 * gateway with many sessions keeps only the busy ones.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `work` after every step queued before it for `key`; resolves (or rejects) with its result. */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    const settled = next.catch(() => {});
    this.tails.set(key, settled);
    void settled.then(() => {
      if (this.tails.get(key) === settled) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves once every step queued so far has settled. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.tails.values()]);
  }
}
