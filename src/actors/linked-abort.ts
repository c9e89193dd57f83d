/**
 * An AbortController of an adapter call that also aborts with its actor's `signal` (when `follow`):
 * the call can then be aborted on its own (a deadline) as well as with the turn. `release()` detaches
 * it from `signal` once the call is over, so a long-lived signal collects no listeners.
 *
 * @example
 * ```ts
 * const call = linkedAbort(signal);
 * try { await work(call.signal); } finally { call.release(); }
 * ```
 */
export function linkedAbort(
  signal: AbortSignal,
  follow = true,
): { signal: AbortSignal; abort(reason: unknown): void; release(): void } {
  const controller = new AbortController();
  const forward = () => controller.abort(signal.reason);
  if (follow) signal.addEventListener("abort", forward, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    release: () => signal.removeEventListener("abort", forward),
  };
}
