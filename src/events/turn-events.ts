import type { RunError } from "../errors.js";
import type { StaleReason } from "../policy/stale-reply.js";
import type { ModelUsage } from "../ports/model.js";
import type { InSession, InTurn, ModelCall, RecheckDecision, ToolCallFields } from "./event-fields.js";

/** A turn's events: the turn, its model calls, its tools and the stale-reply re-check. Part of `TillerEventMap` (src/events.ts). */
export interface TurnEventMap {
  // Turns
  /** A turn started with these messages. */
  "turn.started": InTurn & {
    kind: "turn" | "recovery";
    messageIds: string[];
    /** What started the turn: `user`, or the trigger of a turn nobody typed (`cron`, `heartbeat`, ...). */
    trigger?: string;
  };
  /**
   * A turn ended, whatever the outcome: `error` says why a failed turn failed, `reason` why an aborted
   * one stopped (`/stop`, an interrupting message, `/new`, a lane timeout).
   */
  "turn.ended": InTurn & {
    status: "done" | "aborted" | "failed";
    error?: RunError;
    reason?: string;
    /** The token usage of the turn's model calls, summed, when the provider reported any. */
    usage?: ModelUsage;
  };
  /** A cleared or draining lane refused the turn: its messages wait in the queue again. */
  "turn.requeued": InSession & { messageIds: string[]; reason: string };
  /** A steering message reached the running turn before its next model call. */
  "steer.injected": InTurn & {
    messageIds: string[];
    /** An edited message steered in as the correction of one the turn already had. */
    edit?: true;
  };
  /**
   * Messages acked `steered` that the run ended without showing to the model (it was already writing
   * its final text, with no re-check left): each is answered by a turn of its own. The ack was made
   * before the outcome was known; this says what happened.
   */
  "steer.missed": InTurn & { messageIds: string[]; reason: string };

  // Model
  /** A model call starts; `userTexts` and `messageIds` are the user messages of this turn it sees. */
  "model.called": ModelCall & {
    latestUser: string;
    userTexts: string[];
    messageIds: string[];
    /** On a commitment review's call (`review: true`): the commitment it reviews. */
    commitmentId?: string;
    /** The senders of the turn's messages in this call (`null`: the anonymous user). */
    senders?: Array<string | null>;
    /** The turn's trigger: `user`, or what started a turn nobody typed. */
    trigger?: string;
  };
  /** Text the model streams: a draft a re-check may replace; only the final is delivered. */
  "model.delta": ModelCall & { text: string };
  /**
   * A model call ended, whatever the outcome (`done`, `failed` with `error`, `aborted` with its turn),
   * after `durationMs`; a done call says how many tool calls and how much text it returned, and the
   * finish reason and token usage when the provider reports them.
   */
  "model.ended": ModelCall & {
    status: "done" | "failed" | "aborted";
    durationMs: number;
    toolCalls?: number;
    textLength?: number;
    finishReason?: string;
    usage?: ModelUsage;
    error?: RunError;
  };

  // Tools
  /** A tool call starts. */
  "tool.started": InTurn & ToolCallFields;
  /** A tool call ended, whatever the outcome (`status` as stored in the transcript). */
  "tool.ended": InTurn &
    ToolCallFields & {
      /** `refused`: a commitment review called a tool that is not read-only; it did not run. */
      status: "done" | "failed" | "cancelled" | "skipped" | "refused";
    };
  /** A tool call's arguments did not fit its schema: the tool never ran, the model reads `problems`. */
  "tool.argsInvalid": InTurn & { callId: string; name: string; problems: string[] };
  /** A tool call the turn's authority does not cover: it did not run, the model reads who lacks what. */
  "tool.refused": InTurn & {
    callId: string;
    name: string;
    requires: string[];
    lacking: Array<{ sender: string | null; missing: string[] }>;
  };
  /** A tool call was skipped for a steering message (never started). */
  "tool.skipped": InTurn & ToolCallFields & { reason: string };
  /** A tool call was given up after `limits.toolTimeoutMs` (a cancellable tool is cancelled). */
  "tool.timeout": InTurn & { callId: string; name: string; timeoutMs: number };
  /** @deprecated The same as `tool.timeout`, under its earlier name; emitted next to it. */
  "tool.timedOut": InTurn & { callId: string; name: string; timeoutMs: number };

  // Stale-reply re-check
  /** The draft did not answer the newest user message: the model drafts once more. */
  "recheck.fired": InTurn & RecheckDecision & { reason: StaleReason; detail: string; pass: number };
  /** The draft looked stale but no re-check runs: `limit` (passes used up) or `disabled`. */
  "recheck.skipped": InTurn &
    RecheckDecision & { reason: "limit" | "disabled"; signal: StaleReason; detail: string };
  /** The gateway's own detector threw, timed out or gave no verdict: the built-in signals decided. */
  "recheck.detectorFailed": InTurn & { error: RunError; fallback: "built-in" };
}
