import type { Channel, DeliveryReceipt, OutboundMessage } from "../../ports/channel.js";
import type { DeliveryLog, DeliveryRecord } from "../../ports/delivery-log.js";

type DeliveryListener = (record: DeliveryRecord) => void;

/**
 * The HTTP server's own channel: a send is committed (its receipt carries the `messageId`) once the
 * delivery is durably stored for the session's clients, who read it over the deliveries stream
 * (`GET /v1/sessions/{key}/deliveries`). A send that repeats a stored `deliveryId` returns the stored
 * receipt and stores nothing, so a resend after a restart never shows the user a reply twice. On a log
 * every process shares (PostgreSQL) that holds across the cluster: the channel then declares
 * `dedupesDeliveryIds`, and its sends take no claim.
 *
 * @example
 * ```ts
 * const web = new WebChannel(new MemoryDeliveryLog());
 * const off = web.subscribe("web:1", (record) => console.log(record.text));
 * await web.send({ session: "web:1", text: "hi", kind: "reply" }); // { messageId: "1-…" }
 * ```
 */
export class WebChannel implements Channel {
  private readonly listeners = new Map<string, Set<DeliveryListener>>();
  /** The log's own: only a log every process shares stores a deliveryId once across them. */
  readonly dedupesDeliveryIds: boolean;

  constructor(readonly log: DeliveryLog) {
    this.dedupesDeliveryIds = log.dedupesDeliveryIds === true;
  }

  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    const deliveryId = (message as OutboundMessage & { deliveryId?: unknown }).deliveryId;
    const record = await this.log.append(message.session, {
      kind: message.kind,
      text: message.text,
      ...(message.runId !== undefined ? { runId: message.runId } : {}),
      ...(typeof deliveryId === "string" ? { deliveryId } : {}),
    });
    for (const listener of this.listeners.get(message.session) ?? []) {
      try {
        listener(record);
      } catch {
        // A broken stream must not fail a delivery that is already stored.
      }
    }
    return { messageId: record.messageId };
  }

  /** Open subscriptions for a session (streams that have not closed). */
  listenerCount(session: string): number {
    return this.listeners.get(session)?.size ?? 0;
  }

  /**
   * Calls `wake` when deliveries to `session` may have been stored: by this channel, or (on a shared
   * log) by another process. Returns the unsubscribe.
   */
  watch(session: string, wake: () => void): () => void {
    const local = this.subscribe(session, wake);
    const shared = this.log.watch?.(session, wake);
    return () => {
      local();
      shared?.();
    };
  }

  /** Calls `listener` with each delivery to `session` stored from now on; returns the unsubscribe. */
  subscribe(session: string, listener: DeliveryListener): () => void {
    let set = this.listeners.get(session);
    if (!set) {
      set = new Set();
      this.listeners.set(session, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(session) === set) this.listeners.delete(session);
    };
  }
}
