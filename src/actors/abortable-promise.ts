import { type ActorSystem, type AnyActorRef, fromPromise, type PromiseActorLogic } from "xstate";

/** What the work of {@link fromAbortablePromise} is given besides its input. */
export interface AbortableWork<TInput> {
  input: TInput;
  /** Aborts when the actor stops before the work settled, or when `abort` is called. */
  signal: AbortSignal;
  /** Aborts `signal` alone (a deadline of the work): `stopped()` does not follow it. */
  abort(reason: unknown): void;
  /** A signal that aborts only when the actor stops before the work settled; made on first use. */
  stopped(): AbortSignal;
  /** From now on `signal` no longer aborts when the actor stops (the call it was given is over). */
  release(): void;
}

/** The controllers of one running actor: the work's, and the one that follows the actor alone. */
class Controls {
  readonly work = new AbortController();
  released = false;
  private actor: AbortController | undefined;
  private stopReason: DOMException | undefined;

  stopped(): AbortSignal {
    if (!this.actor) {
      this.actor = new AbortController();
      // Made after the actor stopped: it says so at once.
      if (this.stopReason) this.actor.abort(this.stopReason);
    }
    return this.actor.signal;
  }

  /** The actor stopped: both signals abort with one reason (the default one), the work's first. */
  stop(): void {
    this.stopReason = new DOMException("This operation was aborted", "AbortError");
    if (!this.released) this.work.abort(this.stopReason);
    this.actor?.abort(this.stopReason);
  }
}

/**
 * `fromPromise` whose work can also be aborted on its own, with no second AbortController linked to
 * the actor's by a listener before the work starts: a model call (aborted by its deadline as well as
 * with its turn) then costs one controller up to the call, and the signal that follows the turn alone
 * is made only when something uses it (after the call is issued). Snapshots, events, output and errors
 * are `fromPromise`'s: its own transitions handle them.
 *
 * @example
 * ```ts
 * const call = fromAbortablePromise<string, { url: string }>(async ({ input, signal, abort }) => {
 *   const timer = setTimeout(() => abort(new Error("timed out")), 5_000);
 *   try { return await (await fetch(input.url, { signal })).text(); } finally { clearTimeout(timer); }
 * });
 * ```
 */
export function fromAbortablePromise<TOutput, TInput>(
  work: (args: AbortableWork<TInput>) => PromiseLike<TOutput>,
): PromiseActorLogic<TOutput, TInput> {
  const running = new WeakMap<AnyActorRef, Controls>();
  const base = fromPromise<TOutput, TInput>(work as never);
  return {
    ...base,
    transition: (snapshot, event, scope) => {
      if (snapshot.status === "active" && event.type === "xstate.stop") {
        running.get(scope.self)?.stop();
        running.delete(scope.self);
      }
      return base.transition(snapshot, event, scope);
    },
    start: (snapshot, { self, system }) => {
      if (snapshot.status !== "active") return;
      const controls = new Controls();
      running.set(self, controls);
      // The events fromPromise's own start relays (its transitions turn them into done or error).
      const settled = (type: string, data: unknown) => {
        if (self.getSnapshot().status !== "active") return;
        running.delete(self);
        (system as ActorSystem<never> & Relay)._relay(self, self, { type, data });
      };
      Promise.resolve(
        work({
          input: snapshot.input as TInput,
          signal: controls.work.signal,
          abort: (reason) => controls.work.abort(reason),
          stopped: () => controls.stopped(),
          release: () => {
            controls.released = true;
          },
        }),
      ).then(
        (output) => settled("xstate.promise.resolve", output),
        (error: unknown) => settled("xstate.promise.reject", error),
      );
    },
  };
}

/** How XState's own logic hands an actor an event from itself (`fromPromise` does the same). */
interface Relay {
  _relay(source: AnyActorRef, target: AnyActorRef, event: { type: string; data: unknown }): void;
}
