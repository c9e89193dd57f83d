/**
 * How long to wait before retry number `retry` (0-based): the server's `Retry-After` when it gave one,
 * else exponential backoff with jitter: `base · 2^retry`, capped, of which a random half is waited, so
 * gateways that failed together do not retry together. `undefined` when the server asks for a longer
 * wait than `retryMaxDelayMs`: the call then fails at once rather than hold the turn.
 *
 * @example
 * ```ts
 * retryDelay(1, undefined, { retryBaseMs: 500, retryMaxDelayMs: 30_000 }, () => 0.5); // 750
 * retryDelay(0, 2000, { retryBaseMs: 500, retryMaxDelayMs: 30_000 }, Math.random);   // 2000
 * ```
 */
export function retryDelay(
  retry: number,
  retryAfterMs: number | undefined,
  settings: { retryBaseMs: number; retryMaxDelayMs: number },
  random: () => number,
): number | undefined {
  if (retryAfterMs !== undefined) return retryAfterMs <= settings.retryMaxDelayMs ? retryAfterMs : undefined;
  const ceiling = Math.min(settings.retryMaxDelayMs, settings.retryBaseMs * 2 ** retry);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
