import type { InspectionEvent } from "xstate";
import type { GatewayConfig, GatewayConfigInput } from "../config.js";
import type { EventListener, TillerEvent } from "../events.js";
import type { LaneScheduler } from "../lanes/lane-scheduler.js";
import type { Logger } from "../logger.js";
import type { Commitment } from "../machines/commitment.types.js";
import type { CommitmentProposal } from "../policy/commitment-fields.js";
import type { Channel } from "../ports/channel.js";
import type { Clock } from "../ports/clock.js";
import type { ModelProvider } from "../ports/model.js";
import type { SessionCluster } from "../ports/session-cluster.js";
import type { TranscriptStore } from "../ports/store.js";
import type { ToolDefinition } from "../ports/tool.js";
import type { CommitmentStory } from "./commitments/commitment-story.js";
import type { CommitmentFilter, CommitmentHooks, ProposalOutcome } from "./commitments/commitments.js";
import type { MessageExplanation } from "./explain/message-log.js";
import type { Ack } from "./inbound/compose-ack.js";
import type { TriggerAck, TriggerRequest } from "./inbound/trigger.js";
import type { InboundMessage } from "./inbound/validate-inbound.js";
import type { ScheduleView } from "./schedules/schedule-runner.js";
import type { TelemetryOptions } from "./telemetry/turn-tracer.js";

/** What `createGateway` is built from: the adapters a gateway author plugs in, and the config. */
export interface GatewayOptions {
  /**
   * The configuration (every key optional; see docs/config.md). Parsed once; a bad value throws a
   * `ConfigError` that names the field.
   * @default {}
   */
  config?: GatewayConfigInput | GatewayConfig;
  /** The model provider every turn calls. */
  model: ModelProvider;
  /**
   * The tools the model may call, besides the built-in `message` and `commitment`.
   * @default []
   */
  tools?: ToolDefinition[];
  /** Channels by name; an inbound message's `channel` picks the one its replies go through. */
  channels: Record<string, Channel>;
  /**
   * Where transcripts and pending work are kept.
   * @default new MemoryStore()
   */
  store?: TranscriptStore;
  /**
   * The clock every timer and timestamp uses (a `SimulatedClock` makes a gateway deterministic).
   * @default new SystemClock()
   */
  clock?: Clock;
  /** XState's inspection callback, for Stately's inspector or a custom one. */
  inspect?: (event: InspectionEvent) => void;
  /**
   * The lane scheduler to ask for slots, such as the cluster lanes of several processes on one
   * PostgreSQL (docs/postgres.md). Its `lane.*` events join the gateway's stream when it has `observe`.
   * @default an in-process scheduler with `config.lanes`
   */
  lanes?: LaneScheduler;
  /**
   * OpenTelemetry spans of every turn, model call, tool call and send (docs/observability.md): where
   * they go and the model name they carry.
   * @default the globally registered tracer provider, if any (spans cost nothing without one)
   */
  telemetry?: TelemetryOptions;
  /**
   * Session ownership and the durable inbox of several processes on one database
   * (`createClusterSessions`, docs/postgres.md): each message goes to the process that owns its
   * session, wherever it was received. Give it with the cluster lanes and the PostgreSQL store.
   * @default none: every session runs in this process
   */
  cluster?: SessionCluster;
  /**
   * Sees each finished turn and may propose commitments (validated like the `commitment` tool's);
   * called only when `commitments.enabled`.
   * @default none
   */
  extractCommitments?: CommitmentHooks["extractCommitments"];
  /**
   * A current-state snapshot shown (fenced as data) to each commitment review.
   * @default none
   */
  commitmentSnapshot?: CommitmentHooks["commitmentSnapshot"];
  /**
   * Ids of new commitments.
   * @default `c_` + a random id
   */
  newCommitmentId?: () => string;
  /**
   * A pino-compatible logger; events are logged at debug level.
   * @default createLogger()
   */
  logger?: Logger;
  /**
   * Names each turn's run; must never repeat for a session.
   * @default the session key, `#` and a random id
   */
  newRunId?: (session: string) => string;
}

/** What `inspectSession()` reports about one session, for people and operator pages. */
export interface SessionInspection {
  /** The session machine's state (`idle`, `turn.running`, ...). */
  state: string;
  /** The running turn, if any: its run id, the run machine's state, re-check passes and current tool. */
  run: {
    runId: string;
    state: string;
    passes: number;
    currentTool?: string;
    /**
     * Several processes, over HTTP: the process that runs the turn and its lane, when not the one that
     * answered (`state` is then `running` and `passes` 0: the run's details live on that process).
     */
    process?: string;
    lane?: string;
  } | null;
  /** Work waiting for its own turn, in order. */
  queue: Array<{ kind: string; messageIds: string[] }>;
  /** The session's lane in the lane scheduler, while it has one. */
  lane: { active: number; queued: number; capacity: number } | null;
  /** The sequence number of the session's last transcript record. */
  transcriptLength: number;
}

/**
 * A gateway: sessions, turns, lanes and delivery behind one small API. Built by `createGateway`.
 */
export interface Gateway {
  /** The parsed configuration, every default filled in. */
  readonly config: GatewayConfig;
  /** The clock the gateway runs on. */
  readonly clock: Clock;
  /** The transcript store. */
  readonly store: TranscriptStore;
  /** The lane scheduler every turn waits in. */
  readonly lanes: LaneScheduler;
  /** Session ownership of a gateway of several processes, when it was given one. */
  readonly cluster?: SessionCluster;
  /**
   * Resumes what an earlier process left in the store (pending follow-ups, recoveries, a turn cut off
   * by a crash) and emits `gateway.started`. Call it once, before the first `receive()`.
   */
  start(): Promise<void>;
  /**
   * Accepts one inbound message and resolves with its acknowledgement once the message is durable:
   * what happened to it (`started`, `steered`, `queued`, `collected`, `interrupted`, `rejected`,
   * `duplicate`, or `control` for `/stop`, `/new`, `/queue`). A malformed message rejects with a
   * `MessageRejectedError` naming the field; a draining gateway with `GatewayDrainingError`.
   *
   * @example
   * ```ts
   * const ack = await gateway.receive({ session: "telegram:42", channel: "telegram", text: "hi", id: "m1" });
   * if (ack.disposition === "queued") console.log(`waits at position ${ack.queuePosition}`);
   * ```
   */
  receive(message: InboundMessage): Promise<Ack>;
  /**
   * Every event from now on, as an async iterator. It subscribes when called, so nothing between the
   * call and the first read is missed; it ends with `break` or when `signal` aborts.
   *
   * @example
   * ```ts
   * const controller = new AbortController();
   * for await (const event of gateway.events(controller.signal)) {
   *   if (event.type === "recheck.fired") console.log(event.session, event.reason);
   * }
   * ```
   */
  events(signal?: AbortSignal): AsyncGenerator<TillerEvent>;
  /** The same stream as a synchronous callback; returns the function that unsubscribes. */
  subscribe(listener: EventListener): () => void;
  /** The keys of every session this process has seen since it started (stored ones: `store.sessions()`). */
  sessionKeys(): string[];
  /** The session's state, running turn, queue and lane, or `undefined` for a session never seen. */
  inspectSession(key: string): SessionInspection | undefined;
  /**
   * "What happened to my message?": when it arrived, how it was routed, where it waited, which model
   * call saw it and which reply answered it. `undefined` for a message this process never acked.
   */
  explain(session: string, messageId: string): MessageExplanation | undefined;
  /**
   * Commitments, for operators: `list({ session?, status? })` (oldest first, copies), `dismiss(id)` (the
   * commitment after it; `undefined` for an unknown id) and `propose(session, proposal, origin?)`, which
   * goes through the same checks as the `commitment` tool (`source` defaults to "api").
   */
  readonly commitments: {
    list(filter?: CommitmentFilter): Commitment[];
    dismiss(id: string): Promise<Commitment | undefined>;
    propose(
      session: string,
      proposal: CommitmentProposal,
      origin?: { source?: string; sourceMessageId?: string; sourceRunId?: string },
    ): Promise<ProposalOutcome>;
  };
  /**
   * Starts a turn nobody typed in a session (`cron`, `heartbeat`, `manual`, `subagent`, ...), in the lane
   * and at the priority its trigger maps to; the answer says what happened, like an ack (`started`,
   * `queued`, `dropped` and why).
   */
  trigger(request: TriggerRequest): Promise<TriggerAck>;
  /** The config's schedules: `list()` shows each one's next and last run. */
  readonly schedules: { list(): ScheduleView[] };
  /** A commitment's story: its stored record and what happened to it; `undefined` for an unknown id. */
  explainCommitment(id: string): CommitmentStory | undefined;
  /** True while store writes are in flight. */
  readonly isBusy: boolean;
  /** True after `drain()` or `stop()`, until `resume()`. */
  readonly isDraining: boolean;
  /**
   * Stops admitting work (new messages reject with `GatewayDrainingError`) and resolves when the active
   * turns have ended. Nothing accepted is lost: what still waits resumes after `resume()` or at the next
   * start.
   *
   * @example
   * ```ts
   * process.once("SIGTERM", async () => {
   *   await gateway.drain();
   *   await gateway.stop();
   * });
   * ```
   */
  drain(): Promise<void>;
  /** Admits work again after `drain()`; requeued work runs. */
  resume(): void;
  /** Drains, stops every session and closes the store; emits `gateway.stopped`. */
  stop(): Promise<void>;
}
