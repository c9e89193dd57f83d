import type { EmittedEvent } from "../events.js";
import type { Disposition } from "../policy/ack.js";
import type { PendingTurn, QueueItem } from "../policy/queue-item.js";
import type { ResolvedQueueSetting } from "../policy/queue-mode.js";
import type { OwnedMessage } from "../policy/turn-context.js";
import type { RunInput, RunOutput } from "./run.machine.js";

export type { Disposition, PendingTurn, QueueItem };

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

/** What a session machine starts from: its key, its turn count, and what a restart restored. */
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

/** The events the session machine takes: messages, controls, lane answers and its actors' results. */
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
  "turn.started" | "turn.ended" | "message.dropped" | "turn.requeued" | "steer.missed"
>;

/** What the deliver actor is given: the final (or notice) to send and how it may be shown. */
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

/** What the deliver actor answers: the receipt, or why the send failed. */
export interface DeliverOutput {
  delivered: boolean;
  /** A stranded final whose marker is durable: queue this recovery at the front. */
  recovery: Extract<QueueItem, { kind: "recovery" }> | null;
}
