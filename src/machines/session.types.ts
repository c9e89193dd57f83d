import type { EmittedEvent } from "../events.js";
import type { DeliveryMode } from "../policy/delivery.js";
import type { ResolvedQueueSetting } from "../policy/queue-mode.js";
import type { OwnedMessage } from "../policy/turn-context.js";
import type { RunInput, RunOutput } from "./run.machine.js";

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
    };

/** `control`: a command (`/stop`, `/new`, `/queue`) that acted at once and never reaches the model. */
export type Disposition =
  | "started"
  | "steered"
  | "queued"
  | "collected"
  | "interrupted"
  | "rejected"
  | "duplicate"
  | "dropped"
  | "control";

/** What the session decided for one inbound message; the gateway turns it into the user-facing ack. */
export interface SessionDecision {
  messageId: string;
  disposition: Disposition;
  setting: ResolvedQueueSetting;
  /** Why, in a few words, when the disposition alone does not say it. */
  reason?: string;
  /** For a steer into a running turn: the run that will see it. */
  runId?: string;
  /** Messages dropped to keep the queue within its cap. */
  dropped?: string[];
}

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

export interface SessionInput {
  key: string;
  /** Turns this session already ran, so run ids stay unique when its actor is recreated. */
  turnSeq?: number;
  /** Restored state of a session that was waiting or running when the process died. */
  restored?: { pending: PendingTurn | null; queue: QueueItem[]; summaries: string[] } | undefined;
}

export interface SessionContext {
  key: string;
  pending: PendingTurn | null;
  queue: QueueItem[];
  summaries: string[];
  turnSeq: number;
  runId: string | null;
  lastDecision: SessionDecision | null;
  lastOutput: RunOutput | null;
  /** Collect window of the burst at the head of the queue (its quiet window, cut by its maximum wait). */
  collectDebounceMs: number;
}

export type SessionEvent =
  | { type: "session.message"; message: OwnedMessage; setting: ResolvedQueueSetting }
  | { type: "session.stop" }
  | { type: "session.new" }
  | { type: "session.resume" }
  /** The slot is held and the run is prepared (`input`; none for a resend, which runs no model). */
  | { type: "lane.granted"; runId?: string; input?: RunInput }
  | { type: "turn.prepareFailed"; error: unknown; runId?: string }
  | { type: "lane.rejected"; reason: string }
  | { type: "lane.timeout" };

/** The reason a run aborted by the lane timeout records; the user is told the turn ran out of time. */
export const LANE_TIMEOUT_REASON = "the turn ran past the lane timeout";

/** The session's observable events (the gateway adds `session`; see src/events.ts). */
export type SessionEmitted = EmittedEvent<
  "turn.started" | "turn.ended" | "message.dropped" | "turn.requeued"
>;

export interface DeliverInput {
  session: string;
  kind: "turn" | "recovery";
  /** The messages the turn owned: what its notices' deliveryIds are derived from. */
  messageIds?: string[];
  output: RunOutput;
  recovery?: Extract<QueueItem, { kind: "recovery" }>;
  /** The turn was rolled back: its records are stored, then hidden from later model calls. */
  rolledBack?: boolean;
}

export interface DeliverOutput {
  delivered: boolean;
  /** A stranded final whose marker is durable: queue this recovery at the front. */
  recovery: Extract<QueueItem, { kind: "recovery" }> | null;
}
