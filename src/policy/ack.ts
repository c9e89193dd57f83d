import type { QueueMode, SettingSource } from "./queue-mode.js";

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

/**
 * The acknowledgement of one inbound message (docs/architecture.md): what happened to it, truthfully. It never
 * claims that work stopped unless it did.
 */
export interface Ack {
  session: string;
  messageId: string;
  disposition: Disposition;
  mode: QueueMode;
  modeSource: SettingSource;
  /** A short text a person can read. */
  text: string;
  reason?: string;
  /** For steered and interrupting messages: the run that will see (or was stopped for) the message. */
  runId?: string;
  /** Where it waits: the next decision point of the run, the queue, or a collect window. */
  waitsFor?:
    | "next-model-call"
    | "tool-to-finish"
    | "finalize-recheck"
    | "own-turn"
    | "quiet-window"
    | "turn-start";
  /** The action running when the message arrived, and whether it can be cancelled. */
  runningTool?: { name: string; cancellable: boolean };
  /** Effects of the running turn that already happened (completed tool calls). */
  completedEffects?: string[];
  /** Messages dropped by the queue cap to admit this one. */
  dropped?: string[];
  /** Position in the session's queue (1 = next). */
  queuePosition?: number;
  /**
   * `false` when the message could not be stored durably (the store failed even after retries): it is
   * being handled, but a restart before its answer would lose it. Absent otherwise.
   */
  durable?: false;
  /** The trigger of the background turn the session was busy with when the message arrived (`cron`, ...). */
  busyWith?: string;
  /**
   * Several processes: the process that owns the session and applied the message (or holds it, for a
   * `queued` ack it has not confirmed), when that is not the process that received it.
   */
  owner?: string;
}
