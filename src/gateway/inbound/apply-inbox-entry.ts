import { MessageRejectedError } from "../../errors.js";
import type { InboxEntry } from "../../ports/session-cluster.js";
import type { Ack } from "./compose-ack.js";
import { type TriggerAck, type TriggerExtras, type TriggerRequest, triggerAckOf } from "./trigger.js";
import type { InboundMessage } from "./validate-inbound.js";

/** The inbox mode of a turn nobody typed (its body is the trigger request). */
export const TRIGGER_MODE = "trigger";

/**
 * Applies one inbox row as a local message (or trigger) of this process. A row this process cannot
 * take (its config refuses the message) is answered as rejected rather than left to be tried on every
 * poll. `children`: the rows of subagent tasks whose tools wait here (a task is run once, only here).
 */
export async function applyInboxEntry(
  entry: InboxEntry,
  deps: {
    local(inbound: InboundMessage, arrivedAt?: number): Promise<Ack>;
    localTrigger(request: TriggerRequest, extras?: TriggerExtras): Promise<TriggerAck>;
  },
  children: Set<string>,
): Promise<Ack | TriggerAck> {
  try {
    if (entry.mode === TRIGGER_MODE) {
      const { extras, ...request } = entry.body as TriggerRequest & { extras?: TriggerExtras };
      // A subagent's task runs only where its tool waits for it: a process that took the child over
      // from a dead one (or a restarted one) has nobody to hand its final to.
      if (request.trigger === "subagent" && !children.delete(entry.id))
        return triggerAckOf(
          request,
          entry.messageId,
          "rejected",
          "the tool that started this subagent is gone",
        );
      return await deps.localTrigger(request, extras);
    }
    // It arrived when the process that received it took it in, not when the owner applies it.
    const { arrivedAt, ...inbound } = entry.body as InboundMessage & { arrivedAt?: number };
    return await deps.local(inbound, typeof arrivedAt === "number" ? arrivedAt : undefined);
  } catch (error) {
    if (!(error instanceof MessageRejectedError)) throw error;
    return {
      session: entry.session,
      messageId: entry.messageId,
      disposition: "rejected",
      mode: "steer",
      modeSource: "default",
      reason: error.message,
      text: `Not accepted: ${error.message}.`,
    };
  }
}
