import { errorMessage } from "../errors.js";
import type { DeliveryKind } from "../ports/channel.js";
import { sleep, type TimerHandle } from "../ports/clock.js";
import type { DeliveryClaims, DeliveryOutcome } from "../ports/delivery-claims.js";
import type { ActorDeps } from "./deps.js";
import type { SendResult } from "./send.js";
import { untilStored } from "./store-retry.js";

/** The waits before a claim held elsewhere is asked about again: its holder's send may end any time. */
const MIN_WAIT_MS = 100;
const MAX_WAIT_MS = 1000;

export interface ClaimedSendOptions {
  session: string;
  deliveryId: string;
  kind: DeliveryKind;
  runId?: string | undefined;
  /** The channel the send goes out on, when not the session's own (`send`'s `via`). */
  via?: string | undefined;
  /** The session left this process: a send not yet started here is left to its new owner. */
  signal?: AbortSignal | undefined;
}

/**
 * Calls `send` (the channel) only under this process's claim of the delivery, when the store is shared
 * by several processes (`deliveryClaims`): right before the channel, so an owner whose session was
 * taken over never sends what the new owner sends, and the other way round. A delivery another process
 * already sent is not sent again (its receipt is handed back, as if sent here); one it may have sent
 * (`unknown`) is not resent blindly; one it is sending now is waited for (its outcome, or the end of its
 * claim's lease: it died). While the send runs the claim is renewed, and its outcome is stored after it,
 * so whoever asks next learns it even when this process's own records of the session are refused. A
 * channel that declares `dedupesDeliveryIds` is called without a claim: it shows a delivery once itself.
 */
export async function claimedSend(
  deps: ActorDeps,
  options: ClaimedSendOptions,
  send: () => Promise<SendResult>,
): Promise<SendResult> {
  const claims = deps.writer.store.deliveryClaims;
  if (!claims) return send();
  const { session, deliveryId, kind, runId, signal } = options;
  // A channel that stores a deliveryId once for every process (the web channel on the shared
  // PostgreSQL log) answers a repeat with the first receipt itself: a claim would add two statements.
  if (deps.channelFor(session, options.via).channel.dedupesDeliveryIds === true) return send();
  const key = `${session}\u0000${deliveryId}`;
  // This process's last outcome of the same delivery lands before it is claimed again.
  await outcomes(claims).get(key);
  const told = (answer: "sent" | "unknown" | "waiting") =>
    deps.emit("delivery.claimedElsewhere", { session, runId, kind, deliveryId, answer });
  let waited = false;
  for (;;) {
    let claim: Awaited<ReturnType<DeliveryClaims["claim"]>>;
    try {
      claim = await untilStored(
        deps,
        { session, op: "delivery-claim" },
        () => claims.claim(session, deliveryId),
        signal,
      );
    } catch (error) {
      // The session left while the store was away: its new owner sends it, under its own claim.
      if (signal?.aborted) return { failure: "not-delivered" };
      // Any other failure: the user is not left waiting because the claim could not be written.
      deps.logger.error({ session, deliveryId, error: errorMessage(error) }, "delivery.claimFailed");
      return send();
    }
    if (claim.kind === "claimed") break;
    if (claim.kind === "sent") {
      told("sent");
      return { messageId: claim.messageId };
    }
    if (claim.kind === "unknown") {
      told("unknown");
      return { failure: "unknown" };
    }
    if (!waited) told("waiting");
    waited = true;
    try {
      await sleep(deps.clock, Math.min(Math.max(claim.retryInMs, MIN_WAIT_MS), MAX_WAIT_MS), signal);
    } catch {
      return { failure: "not-delivered" };
    }
  }
  const stopRenewing = renewWhileSending(deps, claims, session, deliveryId);
  let result: SendResult;
  try {
    result = await send();
  } finally {
    stopRenewing();
  }
  const outcome: DeliveryOutcome = result.messageId
    ? { kind: "sent", messageId: result.messageId }
    : { kind: result.failure === "unknown" ? "unknown" : "failed" };
  // Stored whatever became of the session here (the process that holds it now reads it), without
  // holding the turn: its receipt is written meanwhile, and the next claimant waits while the claim
  // still says `sending`.
  const pending = outcomes(claims);
  const settled = untilStored(deps, { session, op: "delivery-claim" }, () =>
    claims.settle(session, deliveryId, outcome),
  )
    .catch((error: unknown) =>
      deps.logger.error({ session, deliveryId, error: errorMessage(error) }, "delivery.claimFailed"),
    )
    .finally(() => {
      if (pending.get(key) === settled) pending.delete(key);
    });
  pending.set(key, settled);
  return result;
}

/** Per store, the outcomes of this process's sends still being written, by session and deliveryId. */
const settling = new WeakMap<DeliveryClaims, Map<string, Promise<void>>>();
function outcomes(claims: DeliveryClaims): Map<string, Promise<void>> {
  let map = settling.get(claims);
  if (!map) {
    map = new Map();
    settling.set(claims, map);
  }
  return map;
}

/** Renews the claim every third of its lease until the returned stop is called. */
function renewWhileSending(
  deps: ActorDeps,
  claims: DeliveryClaims,
  session: string,
  deliveryId: string,
): () => void {
  let timer: TimerHandle | undefined;
  let stopped = false;
  const every = Math.max(1, Math.floor(claims.leaseMs / 3));
  const tick = () => {
    timer = deps.clock.setTimeout(() => {
      claims.renew(session, deliveryId).then(
        () => stopped || tick(),
        (error: unknown) => {
          deps.logger.warn({ session, deliveryId, error: errorMessage(error) }, "delivery.claimRenewFailed");
          if (!stopped) tick();
        },
      );
    }, every);
  };
  tick();
  return () => {
    stopped = true;
    if (timer !== undefined) deps.clock.clearTimeout(timer);
  };
}
