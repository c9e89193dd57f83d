import type { Logger } from "../../logger.js";
import { type Clock, sleep } from "../../ports/clock.js";
import type { ModelReply, ModelRequest } from "../../ports/model.js";
import { isClassified } from "./classify-error.js";
import type { StreamProgress } from "./read-stream.js";

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

/** What {@link withRetries} needs besides the call: the retry settings, the clock and the log. */
export interface RetryContext {
  settings: { maxRetries: number; retryBaseMs: number; retryMaxDelayMs: number };
  clock: Clock;
  logger: Logger;
  random: () => number;
}

/**
 * Runs `attempt` until it answers, retrying a classified retryable failure that came before any of the
 * reply streamed (a reply half shown is never asked again), after {@link retryDelay}, on the gateway's
 * clock. Shared by every HTTP model provider.
 */
export async function withRetries(
  request: ModelRequest,
  context: RetryContext,
  attempt: (progress: StreamProgress) => Promise<ModelReply>,
): Promise<ModelReply> {
  const { settings, clock, logger, random } = context;
  for (let retry = 0; ; retry++) {
    if (request.signal.aborted) throw request.signal.reason;
    const progress: StreamProgress = { started: false, chars: 0 };
    try {
      return await attempt(progress);
    } catch (thrown) {
      if (request.signal.aborted) throw request.signal.reason;
      if (!isClassified(thrown)) throw thrown;
      const { error, retryAfterMs } = thrown;
      const wait =
        error.retryable && !progress.started && retry < settings.maxRetries
          ? retryDelay(retry, retryAfterMs, settings, random)
          : undefined;
      if (wait === undefined) throw error;
      logger.warn(
        { session: request.session, runId: request.runId, code: error.code, retry: retry + 1, waitMs: wait },
        "model.retrying",
      );
      await sleep(clock, wait, request.signal);
    }
  }
}
