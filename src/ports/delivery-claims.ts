/**
 * What a store shared by several gateway processes answers when one of them is about to call a channel
 * for a delivery (`deliveryId` in a session):
 * - `claimed`: this process sends it now, and ends the claim with the outcome;
 * - `sent`: a send of it already reached the platform (from any process): it is not sent again;
 * - `unknown`: a send of it may have reached the platform: it is not sent again blindly;
 * - `held`: another process is sending it now: ask again after `retryInMs` (by then its send has ended,
 *   or it stopped renewing its claim: it died or was cut off for a lease).
 */
export type DeliveryClaim =
  | { kind: "claimed" }
  | { kind: "sent"; messageId: string }
  | { kind: "unknown" }
  | { kind: "held"; retryInMs: number };

/** The outcome a claim is ended with: what the channel said. */
export type DeliveryOutcome = { kind: "sent"; messageId: string } | { kind: "failed" } | { kind: "unknown" };

/**
 * The claims of sends, cluster-wide (docs/postgres.md): of processes that call a channel with one
 * `deliveryId` (an owner whose lease ran out mid-send, and the process that took its session over and
 * resends the open intent or runs the turn again), exactly one sends at a time, and none once one has
 * reached the platform. A claim of a send not ended is renewed by its holder while the channel works;
 * one not renewed for `leaseMs` (its process died) may be taken by another. A send known not delivered
 * may be claimed again (its one resend).
 *
 * @example
 * ```ts
 * const claim = await claims.claim("web:1", "reply:web:1:m1");
 * if (claim.kind === "claimed") {
 *   const receipt = await channel.send(message);
 *   await claims.settle("web:1", "reply:web:1:m1", { kind: "sent", messageId: receipt.messageId! });
 * }
 * ```
 */
export interface DeliveryClaims {
  /** How long a claim holds without renewal (ms). */
  readonly leaseMs: number;
  /** Claims the send for this process, or says why not (compare-and-set: one claimant wins). */
  claim(session: string, deliveryId: string): Promise<DeliveryClaim>;
  /** Keeps this process's claim of a send in flight; false when it no longer holds it. */
  renew(session: string, deliveryId: string): Promise<boolean>;
  /** Ends this process's claim with the send's outcome. */
  settle(session: string, deliveryId: string, outcome: DeliveryOutcome): Promise<void>;
}
