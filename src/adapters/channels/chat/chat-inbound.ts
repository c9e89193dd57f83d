import type { Sender } from "../../../policy/sender.js";

/**
 * An inbound message as a chat channel hands it to `gateway.receive`: the gateway's message plus the
 * platform ids a reply threads on (`replyTo`, `thread`) and, for an edited message, the id of the
 * message it replaces (`editOf`).
 */
export interface ChatInbound {
  session: string;
  channel: string;
  text: string;
  id: string;
  sender?: Sender;
  /** The platform id of this message, which the answer replies to. */
  replyTo?: string;
  /** The platform thread (a forum topic, a Slack thread). */
  thread?: string;
  /** For an edited message: the id of the message it replaces. */
  editOf?: string;
}

/** How a chat channel hands an inbound message over: `gateway.receive`, resolved once it is durable. */
export type ChatReceive = (message: ChatInbound) => Promise<unknown>;
