const promiseThen = Promise.prototype.then;

/**
 * Waits for the promises tasks return, with callbacks that are reused: a pair waits on one promise at a
 * time and goes back to the pool once that promise settles (a task past its deadline keeps its pair until
 * it does), so a running task allocates no closures of its own. Only native promises get a pooled pair:
 * a native promise calls one of them once, where any other thenable could call them again later.
 *
 * @example
 * ```ts
 * const pool = new SettlePool<string>((name, outcome, value) => console.log(name, outcome, value));
 * pool.watch("a", Promise.resolve(42)); // logs "a done 42"
 * ```
 */
export class SettlePool<E> {
  private readonly idle: Array<Settler<E>> = [];

  constructor(private readonly settle: (entry: E, outcome: "done" | "failed", value: unknown) => void) {}

  /** Calls `settle` with `entry` once `result` settles. */
  watch(entry: E, result: PromiseLike<unknown>): void {
    if (!(result instanceof Promise && result.constructor === Promise)) {
      this.watchThenable(entry, result);
      return;
    }
    const settler = this.idle.pop() ?? this.make();
    settler.entry = entry;
    promiseThen.call(result, settler.done, settler.failed);
  }

  /** Apart from `watch`: its closures, made there, made every call allocate a context for them. */
  private watchThenable(entry: E, result: PromiseLike<unknown>): void {
    result.then(
      (value) => this.settle(entry, "done", value),
      (error) => this.settle(entry, "failed", error),
    );
  }

  private make(): Settler<E> {
    const settler: Settler<E> = {
      entry: null,
      done: (value) => this.finish(settler, "done", value),
      failed: (error) => this.finish(settler, "failed", error),
    };
    return settler;
  }

  private finish(settler: Settler<E>, outcome: "done" | "failed", value: unknown): void {
    const entry = settler.entry as E;
    settler.entry = null;
    if (this.idle.length < MAX_IDLE) this.idle.push(settler);
    this.settle(entry, outcome, value);
  }
}

/** Idle pairs kept: as many as tasks usually run at once; beyond that they are left to the collector. */
const MAX_IDLE = 256;

interface Settler<E> {
  entry: E | null;
  done: (value: unknown) => void;
  failed: (error: unknown) => void;
}
