import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { TranscriptStore } from "../../ports/store.js";

/** Per session: the claims in flight, so receives continue in the order they arrived. */
const chains = new WeakMap<object, Promise<unknown>>();

/**
 * Cluster-wide dedupe of inbound message ids: on a store that several gateway processes share (one
 * with `claimMessageId`), an id another process accepted within the dedupe window is a duplicate here
 * too. True when the message is new (always, on a store without it, or when the store cannot answer:
 * this process's own dedupe still holds). Claims of one session run one after another.
 */
export function claimInbound(
  store: TranscriptStore,
  logger: Logger,
  memory: object,
  message: { session: string; id: string },
  now: number,
  windowMs: number,
): Promise<boolean> {
  const claim = store.claimMessageId?.bind(store);
  if (!claim) return Promise.resolve(true);
  const previous = chains.get(memory) ?? Promise.resolve();
  const run = previous.then(() =>
    claim(message.session, message.id, now, now - windowMs).catch((error: unknown) => {
      logger.warn({ session: message.session, error: errorMessage(error) }, "dedupe.claimFailed");
      return true;
    }),
  );
  chains.set(memory, run);
  return run;
}

/** Gives a claimed id back (the session turned the message away: it may be sent again). */
export async function releaseInbound(
  store: TranscriptStore,
  logger: Logger,
  message: { session: string; id: string },
): Promise<void> {
  try {
    await store.releaseMessageId?.(message.session, message.id);
  } catch (error) {
    logger.warn({ session: message.session, error: errorMessage(error) }, "dedupe.releaseFailed");
  }
}
