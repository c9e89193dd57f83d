import type { Ack } from "../policy/ack.js";
import type { Sender } from "../policy/sender.js";
import type { DeliveryKind } from "../ports/channel.js";
import type { InSession, InTurn } from "./event-fields.js";

/** The gateway's own events and the sessions'. Part of `TillerEventMap` (src/events.ts). */
export interface GatewayEventMap {
  // Gateway
  /** `start()` finished resuming what an earlier process left. */
  "gateway.started": Record<never, never>;
  /** `drain()` was called: new messages are refused, active turns finish. */
  "gateway.draining": Record<never, never>;
  /** `stop()` finished: lanes drained, sessions stopped, the store closed. */
  "gateway.stopped": Record<never, never>;
  /**
   * An inbound message (or a triggered turn's text) arrived, from any client or channel, before it is
   * admitted (its `message.acked` follows): `at` is its arrival time, which the transcript keeps as the
   * user record's `arrivedAt`.
   */
  "message.received": InSession & {
    messageId: string;
    /** The message as the user wrote it. */
    text: string;
    channel: string;
    /** Who sent it (absent: the session's anonymous user). */
    sender?: Sender;
    /** An edit: the id of the message it replaces. */
    editOf?: string;
    /** For a turn nobody typed: its trigger (`cron`, `heartbeat`, ...). */
    trigger?: string;
  };
  /** An inbound message got its acknowledgement (the `Ack` that `receive()` returns). */
  "message.acked": Ack & {
    /** Who sent it (absent: the session's anonymous user). */
    sender?: Sender;
    /** For a turn nobody typed: its trigger (`cron`, `heartbeat`, ...). */
    trigger?: string;
  };
  /** Several processes: the message went to the process that owns its session (`confirmed`: its ack came back in time). */
  "message.forwarded": InSession & { messageId: string; owner: string; confirmed: boolean };
  /** A message left its turn or queue without being answered (`/stop`, `/new`, the queue cap). */
  "message.dropped": InSession & { runId?: string; messageId: string; reason: string; summary?: string };
  /** The built-in `message` tool sent a visible message. */
  "message.sent": InTurn & { messageId: string; kind: DeliveryKind };

  // Sessions
  /** A session's actor stopped on an internal error; its messages are kept. */
  "session.crashed": InSession & { error: string };
  /** A restarted gateway resumed the session (`note` says what it found and did). */
  "session.resumed": InSession & { note: string };
  /** Several processes: this process took the session (nobody live owned it); `resumed`: with stored work. */
  "session.adopted": InSession & { resumed: boolean };
  /**
   * Several processes: this process's ownership of the session ran out before it was renewed; its live
   * state here was stopped (the next owner resumes the session from the store).
   */
  "session.lost": InSession;
  /** `/new` started a fresh conversation (a new transcript revision). */
  "session.reset": InSession;
  /** The session's window reached `limits.maxWindowRecords`: the model starts from a fresh window. */
  "transcript.rotated": InTurn & { windowRecords: number };
}
