import type { Ack } from "./compose-ack.js";
import type { TriggerAck } from "./trigger.js";

/** More than this many acks nobody took (a receive that failed after its row was applied) drop the oldest. */
const LIMIT = 10_000;

/**
 * Acks of inbox rows this process received and then applied itself, in a step other than the one
 * its `receive()` waits for (an earlier message of the session drained the rows behind it): kept
 * here until that receive takes its ack, so it does not read back from the inbox what it just wrote.
 * Only the process that wrote an ack reads it here; the inbox row holds it for everyone else.
 */
export class AppliedAcks {
  private readonly acks = new Map<string, Ack | TriggerAck>();

  remember(id: string, ack: Ack | TriggerAck): void {
    this.acks.set(id, ack);
    if (this.acks.size > LIMIT) this.acks.delete(this.acks.keys().next().value!);
  }

  has(id: string): boolean {
    return this.acks.has(id);
  }

  /** The ack of row `id` if it was applied here (and forgets it). */
  take(id: string): Ack | TriggerAck | undefined {
    const ack = this.acks.get(id);
    this.acks.delete(id);
    return ack;
  }
}
