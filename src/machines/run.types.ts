import type { RunError } from "../errors.js";
import type { EmittedEvent } from "../events.js";
import type { Sender } from "../policy/sender.js";
import type { DetectorName } from "../policy/stale-detector.js";
import type { DraftFacts, DraftVerdict, RecheckFigures, StaleReason } from "../policy/stale-reply.js";
import type { ModelMessage, OwnedMessage, ToolCallRequest, TurnItem } from "../policy/turn-context.js";

// The run machine's input, context, events and output, and what its invoked actors take and return.

export interface RecheckSettings {
  enabled: boolean;
  maxPasses: number;
  minOverlap: number;
  complaintPatterns: readonly string[];
  /** `custom`: the gateway provides its own detector (the `detectStale` actor); default `built-in`. */
  detector?: "built-in" | "custom";
}

/** What one turn's run machine starts from: its session, messages, tools and re-check settings. */
export interface RunInput {
  runId: string;
  session: string;
  kind: "turn" | "recovery";
  /** The channel of the newest message the turn started with: its replies go out there. */
  channel?: string;
  /**
   * What the turn's sends are named after (its messages, or the final it recovers): a turn re-run
   * after a crash sends under the same delivery ids. Default: the run id.
   */
  turnKey?: string;
  /** What started the turn (`user` when a person typed it, `subagent`, a schedule, ...). Default `user`. */
  trigger?: string;
  /** The lane the turn runs in (a subagent it starts runs in the lane below it). Default `main`. */
  lane?: string;
  /** User messages the turn starts from, in arrival order. */
  messages: OwnedMessage[];
  /** Items the model sees before the messages (notes about dropped messages). */
  preamble: TurnItem[];
  history: ModelMessage[];
  /** Recent user messages of earlier turns, newest first, for the overlap signal. */
  olderUserTexts: string[];
  /** The assistant's last visible (delivered) message before this turn: the topic a short follow-up continues. */
  lastAssistantText?: string;
  recheck: RecheckSettings;
  tools: string[];
  /** Tools an interrupt may stop mid-way. */
  cancellableTools: string[];
  /**
   * @deprecated Every run starts its first model call when it is created; this is ignored (it is still
   * accepted, so inputs built for the earlier `idle` state type-check).
   */
  autoStart?: boolean;
  /** `queue.steering: "one-at-a-time"`: each model call gets the oldest held steering message only. */
  steering?: "one-at-a-time";
  /** Model calls one turn may make (default 25); a model that keeps asking for tools is stopped. */
  maxModelCalls?: number;
  /**
   * Typed messages already waiting for their own turn when a background turn starts: it sees them (it
   * does not answer them) so its final never ignores them.
   */
  noticed?: OwnedMessage[];
  /** Messages already in the transcript (a turn resumed after a restart): owned, not stored again. */
  storedMessageIds?: string[];
  /**
   * Where this turn begins in `history` when part of it is already stored (a resumed turn's own
   * messages): the model sees them as the turn, not as history. Default: after all of `history`.
   */
  historyTurnStart?: number;
}

/** What the call-model actor is given: the turn's context window and the tools the model may call. */
export interface CallModelInput {
  runId: string;
  session: string;
  call: number;
  recheck: boolean;
  recovery: boolean;
  context: ModelMessage[];
  turnStart: number;
  tools: string[];
  /** Journal items not yet durable; stored before the call. */
  unpersisted: TurnItem[];
  /** Index in the journal of `unpersisted[0]`, so a store that already took them never takes them twice. */
  journalOffset: number;
  /** What started the turn (the input's), for the `model.called` event. */
  trigger?: string;
}

/** What the call-model actor answers: the model's reply for one call. */
export interface CallModelOutput {
  text: string;
  toolCalls: ToolCallRequest[];
  persisted: number;
}

/** What the run-tool actor is given: one tool call, the turn's authority and its abort signal. */
export interface RunToolInput {
  runId: string;
  session: string;
  /** The turn's kind and reply channel, for the tools that send (the built-in `message` tool). */
  kind: "turn" | "recovery";
  channel?: string;
  /** What the turn's sends are named after (the input's; default the run id). */
  turnKey?: string;
  /** Visible sends the turn's tools claimed before this call: the next one is `sendOrdinal + 1`. */
  sendOrdinal: number;
  /** The turn's lane, where a subagent the tool starts takes the lane below. */
  lane?: string;
  call: ToolCallRequest;
  /** Journal items not yet durable (ending with this call's toolCall record); stored before it runs. */
  unpersisted: TurnItem[];
  journalOffset: number;
  /**
   * The senders of every message the turn owns, steering still held back included: the turn's authority
   * is theirs, narrowed at once when another sender's message joins. Empty: the anonymous user alone.
   */
  senders?: Sender[];
  /** Some message of the turn has no sender (the anonymous user, who holds no scopes). */
  anonymous?: boolean;
}

/** What the run-tool actor answers for one tool call: its status and result. */
export interface RunToolOutput {
  status: "done" | "failed";
  result: unknown;
  persisted: number;
  /** Visible sends the turn's tools claimed once this call ended (the input's when it sent nothing). */
  sendOrdinal?: number;
}

export interface DetectStaleInput {
  runId: string;
  session: string;
  facts: DraftFacts;
}

/** The detector's verdict, already checked by the actor (anything else is an error, and a fallback). */
export type DetectStaleOutput = DraftVerdict;

/** The verdict of the newest draft, with the figures behind it and who decided it. */
export interface RunVerdict {
  stale: boolean;
  reason?: StaleReason;
  detail?: string;
  figures?: RecheckFigures;
  detector?: DetectorName;
  /** The gateway's detector failed (threw, timed out, returned no verdict); the built-in signals decided. */
  fallback?: boolean;
}

/**
 * The run's context. `assign` copies it whole (`Object.assign({}, context, patch)`): past nineteen fields
 * that copy leaves V8's fast properties and every step reads and copies a dictionary (measured: the
 * run's twenty fields cost a seventh of the bare machines' time to the first model call). A new field
 * goes into `input` when it is fixed for the turn, or replaces one.
 */
export interface RunContext {
  /** Fixed for the turn (the history window included), kept by reference: `assign` never copies it. */
  input: RunInput;
  journal: TurnItem[];
  persisted: number;
  owned: OwnedMessage[];
  /** Arrived, not yet shown to the model. */
  steerBuffer: OwnedMessage[];
  /** Typed messages waiting for their own turn, not yet shown to the model (background turns). */
  noticeBuffer: OwnedMessage[];
  /** Typed messages waiting for their own turn that the model was shown. */
  noticed: OwnedMessage[];
  call: number;
  passes: number;
  recheckPending: boolean;
  pendingCalls: ToolCallRequest[];
  toolIndex: number;
  /** Tools that completed in this turn: effects that already happened. */
  completedTools: string[];
  /**
   * Visible sends the turn's tools claimed so far (message-tool sends attempted): the place of each in
   * the turn names its durable delivery id, so a re-run never sends one twice.
   */
  sendOrdinal: number;
  draft: string;
  verdict: RunVerdict;
  abortReason: string | null;
  error: RunError | null;
  status: "running" | "done" | "aborted" | "failed";
}

/** The events the run machine takes: steering, abort, stop, and the results of its actors. */
export type RunEvent =
  /** @deprecated A run starts when it is created; this is ignored (kept so code that sends it compiles). */
  | { type: "run.start" }
  | { type: "run.steer"; message: OwnedMessage }
  /** A typed message queued for its own turn arrived during this (background) turn: show it, do not own it. */
  | { type: "run.notice"; message: OwnedMessage }
  /** `abandon`: do not wait for a running tool that cannot be cancelled (the lane timeout ended the turn). */
  | { type: "run.abort"; reason: string; abandon?: boolean }
  /** `/stop`: abort, and drop the steering messages the run still holds back (never shown to the model). */
  | { type: "run.stop"; reason: string };

/** The run's observable events (the gateway adds `session` and `runId`; see src/events.ts). */
export type RunEmitted = EmittedEvent<
  | "steer.injected"
  | "notice.injected"
  | "message.dropped"
  | "tool.started"
  | "tool.ended"
  | "tool.skipped"
  | "recheck.fired"
  | "recheck.skipped"
  | "recheck.detectorFailed"
>;

/** How a turn ended: its final text, its status, what it owned and what it left to deliver. */
export interface RunOutput {
  runId: string;
  status: "done" | "aborted" | "failed";
  final: string;
  /** Ids of the user messages the model saw in this turn. */
  answered: string[];
  /** Messages that reached the turn too late to be shown to the model; the session re-queues them. */
  leftover: OwnedMessage[];
  journal: TurnItem[];
  persisted: number;
  passes: number;
  completedTools: string[];
  error: RunError | null;
  abortReason: string | null;
  /** Visible messages the `message` tool sent in this turn (a `message_tool` final counts as delivered). */
  messageSends: number;
  /** The channel the turn's replies go out on (its input's). */
  channel?: string;
  /** What started the turn (its input's): a subagent's final goes back to its tool, not to a channel. */
  trigger?: string;
}

export type { DetectorName, RunError };
