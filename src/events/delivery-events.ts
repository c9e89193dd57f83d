import type { DeliveryMode } from "../policy/delivery.js";
import type { DeliveryKind } from "../ports/channel.js";
import type { InSession, InTurn, StoreOp } from "./event-fields.js";

/** Delivery of a final, and the durable writes that failed. Part of `TillerEventMap` (src/events.ts). */
export interface DeliveryEventMap {
  // Delivery
  /** The final reached the user (a committed receipt). `stored: false` when `/new` came meanwhile. */
  "final.delivered": InTurn & {
    messageId?: string;
    stored?: false;
    /** The delivery's stable id (the same across a resend after a crash). */
    deliveryId?: string;
    /** Delivered by the one resend of an intent a crash left without a receipt. */
    resent?: true;
  };
  /** A non-empty final was stored but did not reach the user. */
  "final.undelivered": InTurn & { reason: string };
  /** The final was empty: nothing is sent. */
  "final.silent": InTurn;
  /**
   * A channel send failed or gave no `messageId`. `outcome`: `not-delivered` (the platform does not
   * have it), `permanent` (refused for good, never retried) or `unknown` (it may have arrived).
   */
  "delivery.failed": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    reason: string;
    deliveryId?: string | undefined;
    outcome?: "not-delivered" | "permanent" | "unknown";
  };
  /** A send refused with `retryAfterMs` is tried once more after that long. */
  "delivery.retried": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId?: string | undefined;
    afterMs: number;
  };
  /** A send answered with a receipt after `delivery.sendTimeoutMs`: it counts as delivered. */
  "delivery.late": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId?: string | undefined;
    timeoutMs: number;
  };
  /** The channel's `reconcile` was asked about a send of unknown outcome, and what it answered. */
  "delivery.reconciled": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId: string;
    answer: "delivered" | "not-delivered" | "unknown";
  };
  /** After a restart: an intent without a receipt was sent once more, under the same `deliveryId`. */
  "delivery.resent": InTurn & { deliveryId: string; kind: DeliveryKind; delivered: boolean };
  /**
   * In a cluster, another process holds the claim of this send: `sent` (it reached the platform from
   * there: not sent again, it counts as delivered), `unknown` (it may have arrived: not resent), or
   * `waiting` (that process is sending it now: asked again once its send ends or its claim runs out).
   * Never for a channel that declares `dedupesDeliveryIds` (the `web` channel on PostgreSQL): its sends
   * take no claim, and a repeat of a delivery stored elsewhere is answered the stored receipt, silently.
   */
  "delivery.claimedElsewhere": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId: string;
    answer: "sent" | "unknown" | "waiting";
  };
  /** The durable `sending` intent could not be written: the send goes out without crash safety. */
  "delivery.intentFailed": InSession & {
    runId?: string | undefined;
    kind: DeliveryKind;
    deliveryId: string;
    error: string;
  };
  /** A send's receipt could not be written after the send. */
  "delivery.receiptFailed": InSession & { deliveryId: string; error: string };
  /** The hidden undelivered-final marker is durable. */
  "marker.appended": InTurn & { finalSeq: number };
  /** A stranded final got its one recovery, queued at the front of the session. */
  "recovery.queued": InTurn & { deliveryMode: DeliveryMode };
  /** The recovery reached the user. */
  "recovery.delivered": InTurn & { strandedRunId?: string | undefined };
  /** The recovery stranded too: the user gets the could-not-deliver notice. */
  "recovery.failed": InTurn & { strandedRunId?: string | undefined };
  /** The could-not-deliver notice was sent (`delivered` says whether the channel took it). */
  "notice.sent": InTurn & { delivered: boolean };

  // Store failures
  /**
   * A durable write failed. `op` says which: `turn` (the turn's records), `final` (the final),
   * `marker` (the undelivered-final marker), `state` (the session's pending work).
   */
  "store.failed": InSession & { op: StoreOp; runId?: string; error: string; delivered?: boolean };
  /** `store.failed` with `op: "turn"`, under its earlier name; emitted next to it. */
  "turn.storeFailed": InTurn & { error: string };
  /** `store.failed` with `op: "final"`, under its earlier name; emitted next to it. */
  "final.storeFailed": InTurn & { delivered?: boolean; error: string };
  /** `store.failed` with `op: "marker"`, under its earlier name; emitted next to it. */
  "marker.storeFailed": InTurn & { error: string };
  /** `store.failed` with `op: "state"`, under its earlier name; emitted next to it. */
  "state.saveFailed": InSession & { error: string };
  /** A state save failed and is tried again (`attempt` of 3) before the ack. */
  "state.saveRetried": InSession & { attempt: number; error: string };
}
