import type { DeliveryMode } from "./delivery.js";
import type { OwnedMessage } from "./turn-context.js";

/** Work waiting for its own turn in a session. */
export type QueueItem =
  | { kind: "followup"; messages: OwnedMessage[]; resumed?: boolean }
  | { kind: "collect"; channel: string; messages: OwnedMessage[] }
  | {
      kind: "recovery";
      text: string;
      strandedRunId: string;
      deliveryMode: DeliveryMode;
      resumed?: boolean;
      /** The delivery this resends (the stranded final's), so a channel can drop a second copy. */
      deliveryId?: string;
      /**
       * A send a crash left without a receipt: resent once as it was (`kind`; `final` when it was a
       * turn's final, whose receipt is its assistant record). No new intent is written.
       */
      intent?: { kind: "reply" | "ack" | "recovery" | "notice" | "commitment"; final: boolean };
      /** The threading of the stranded send (`OutboundMessage.replyTo`, `thread`). */
      replyTo?: string;
      thread?: string;
      /** Parts of a split text already delivered (part number → messageId): never sent again. */
      parts?: Record<string, string>;
    };

/** The turn a session is about to run or runs now, as a restart finds it. */
export interface PendingTurn {
  kind: "turn" | "recovery";
  messages: OwnedMessage[];
  /** One-line summaries of messages dropped by the cap, shown to the next turn. */
  summaries: string[];
  recovery?: Extract<QueueItem, { kind: "recovery" }>;
  /** A restart cut this turn off; it runs again at background priority. */
  resumed?: boolean;
  /** An interrupting message was acknowledged: this turn is being cut off and never runs again. */
  interrupted?: boolean;
  /** `rollback` mode: the cut-off turn's messages and records are hidden from every later model call. */
  rolledBack?: boolean;
  /** What started the turn when nobody typed it (`cron`, `heartbeat`, ...); absent for a user's turn. */
  trigger?: string;
  /** The workload lane, when not the trigger's own (a subagent nested in a scheduled job). */
  lane?: string;
  /** The tools the turn may call, when fewer than all (a subagent's). */
  tools?: string[];
}
