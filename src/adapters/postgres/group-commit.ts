/**
 * One batch statement in flight; items arriving meanwhile form the next batch. Two in flight halve the
 * batches under load (each statement costs the process and the database CPU), for no gain in latency
 * on a machine whose cores are busy anyway.
 */
const IN_FLIGHT = 1;

interface Waiting<T, R> {
  item: T;
  resolve(done: R): void;
  reject(error: unknown): void;
}

/**
 * Group commit of one kind of write: the writes of different sessions that arrive while earlier
 * batches are in flight go to the database together, through `run` (one statement: one round trip, one
 * commit), so a busy process pays one wait for the disk for many of them. A write resolves only once its
 * batch has committed, with `run`'s answer for it (the store's: false, refused, nothing written). A
 * caller that submits a session's writes one after another (the store does) keeps them in call order.
 * When a batch of several fails, each write for which `retryAlone(error, item)` says trying again
 * cannot write twice is tried once more alone, so one bad row fails only its own write; the others are
 * rejected.
 */
export class GroupCommit<T extends { session: string }, R = boolean> {
  private waiting: Waiting<T, R>[] = [];
  private inFlight = 0;

  constructor(
    private readonly run: (batch: readonly T[]) => Promise<R[]>,
    private readonly retryAlone: (error: unknown, item: T) => boolean,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.waiting.length === 1) queueMicrotask(() => this.next());
    });
  }

  private alone(write: Waiting<T, R>): void {
    this.run([write.item]).then(
      (done) => write.resolve(done[0]!),
      (error: unknown) => write.reject(error),
    );
  }

  private next(): void {
    if (this.inFlight >= IN_FLIGHT || this.waiting.length === 0) return;
    // Rows in key order: two processes' batches lock shared rows in the same order.
    const batch = this.waiting.splice(0).sort((a, b) => (a.item.session < b.item.session ? -1 : 1));
    this.inFlight++;
    this.run(batch.map((write) => write.item))
      .then(
        (done) => {
          for (const [index, write] of batch.entries()) write.resolve(done[index]!);
        },
        (error: unknown) => {
          for (const write of batch)
            if (batch.length > 1 && this.retryAlone(error, write.item)) this.alone(write);
            else write.reject(error);
        },
      )
      .finally(() => {
        this.inFlight--;
        this.next();
      });
  }
}
