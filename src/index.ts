/**
 * Tiller: the orchestration core of a chat-agent gateway, built as XState v5 actors.
 *
 * @example
 * ```ts
 * import { createGateway, LoopbackChannel, ScriptedModel, SystemClock } from "tiller-gateway";
 * const clock = new SystemClock();
 * const gateway = createGateway({
 *   model: new ScriptedModel([{ reply: { text: "Re: {{latestUser}}" } }], clock),
 *   channels: { web: new LoopbackChannel() },
 *   clock,
 * });
 * await gateway.start();
 * const ack = await gateway.receive({ session: "web:1", channel: "web", text: "hi", id: "m1" });
 * ```
 */

export { type AISDKModel, createAISDKModel } from "./adapters/ai-sdk/create-ai-sdk-model.js";
export type { AISDKLanguageModel, AISDKModelOptions, AISDKSettings } from "./adapters/ai-sdk/options.js";
export {
  type AnthropicModelOptions,
  createAnthropicModel,
} from "./adapters/anthropic/create-anthropic-model.js";
export { LoopbackChannel } from "./adapters/channels/loopback-channel.js";
export { WebChannel } from "./adapters/channels/web-channel.js";
export { DEMO_TOOL, DemoModel, type DemoModelOptions, demoTool } from "./adapters/demo-model.js";
export { FileDeliveryLog } from "./adapters/jsonl/file-delivery-log.js";
export { JsonlStore } from "./adapters/jsonl/jsonl-store.js";
export { MemoryStore } from "./adapters/memory-store.js";
export { createOpenAIModel, type OpenAIModel } from "./adapters/openai/create-openai-model.js";
export type { OpenAIModelOptions, OpenAISettings } from "./adapters/openai/options.js";
export { toChatMessages } from "./adapters/openai/to-chat-messages.js";
export {
  type ClusterSessions,
  type ClusterSessionsOptions,
  createClusterSessions,
} from "./adapters/postgres/cluster-sessions.js";
export type { FenceSource } from "./adapters/postgres/fences.js";
export {
  deliveriesChannel,
  PostgresDeliveryLog,
  type PostgresDeliveryLogOptions,
} from "./adapters/postgres/postgres-delivery-log.js";
export { PostgresStore, type PostgresStoreOptions } from "./adapters/postgres/postgres-store.js";
export { ScriptedModel, type ScriptedRule } from "./adapters/scripted-model.js";
export { SimulatedClock } from "./adapters/simulated-clock.js";
export { SystemClock } from "./adapters/system-clock.js";
export { type GatewayConfig, type GatewayConfigInput, parseConfig } from "./config.js";
export {
  ChannelSendError,
  type ChannelSendOutcome,
  ConfigError,
  GatewayDrainingError,
  LaneClearedError,
  LaneTimeoutError,
  MessageRejectedError,
  ModelError,
  type ModelErrorCode,
  StaleWriterError,
  StoreLockedError,
  TILLER_ERROR_CODES,
  TillerError,
  type TillerErrorCode,
} from "./errors.js";
export {
  EventHub,
  type EventListener,
  type LaneEvent,
  type TillerEvent,
  type TillerEventMap,
  type TillerEventOf,
  type TillerEventType,
} from "./events.js";
export type { CommitmentStory } from "./gateway/commitments/commitment-story.js";
export type { CommitmentFilter, FinishedTurn, ProposalOutcome } from "./gateway/commitments/commitments.js";
export { createGateway } from "./gateway/create-gateway.js";
export type { MessageExplanation } from "./gateway/explain/message-log.js";
export type { Gateway, GatewayOptions, SessionInspection } from "./gateway/gateway.types.js";
export type { Ack } from "./gateway/inbound/compose-ack.js";
export type { InboundMessage } from "./gateway/inbound/validate-inbound.js";
export type { TelemetryOptions } from "./gateway/telemetry/turn-tracer.js";
export {
  createHttpServer,
  type HttpServer,
  type HttpServerOptions,
} from "./http/create-http-server.js";
export { HttpError } from "./http/http-error.js";
export { type Route, type RouteContext, Router } from "./http/router.js";
export {
  type ClusterLanes,
  type ClusterLanesOptions,
  createClusterLanes,
} from "./lanes/cluster/cluster-lanes.js";
export {
  createLaneScheduler,
  type LaneScheduler,
  type LaneSchedulerOptions,
  type LaneSnapshot,
  type RunOptions,
} from "./lanes/lane-scheduler.js";
export { createLogger, type Logger, silentLogger } from "./logger.js";
export { commitmentMachine } from "./machines/commitment.machine.js";
export type { Classification, Commitment, CommitmentStatus } from "./machines/commitment.types.js";
export { type LaneEntryEvent, laneEntryMachine } from "./machines/lane-entry.machine.js";
export { type LaneSchedulerEvent, laneSchedulerMachine } from "./machines/lane-scheduler.machine.js";
export {
  type CallModelInput,
  type CallModelOutput,
  type RunEmitted,
  type RunError,
  type RunEvent,
  type RunInput,
  type RunOutput,
  type RunToolInput,
  type RunToolOutput,
  runMachine,
} from "./machines/run.machine.js";
export { sessionMachine } from "./machines/session.machine.js";
export type {
  DeliverInput,
  DeliverOutput,
  PendingTurn,
  QueueItem,
  SessionEmitted,
  SessionEvent,
  SessionInput,
} from "./machines/session.types.js";
export type { CommitmentProposal } from "./policy/commitment-fields.js";
export { laneForNested, type Priority, priorityForTrigger } from "./policy/lane-priority.js";
export { parseQueueMode, type QueueMode, resolveQueueSetting } from "./policy/queue-mode.js";
export type { Sender } from "./policy/sender.js";
export type { DetectorVerdict, StaleDetector } from "./policy/stale-detector.js";
export {
  acknowledgesComplaint,
  assessDraft,
  DEFAULT_COMPLAINT_PATTERNS,
  type DraftFacts,
  type DraftVerdict,
  matchComplaint,
  type RecheckFigures,
  type StaleReason,
} from "./policy/stale-reply.js";
export {
  ACK_REACTIONS,
  type Channel,
  type ChannelCallOptions,
  type DeliveryReceipt,
  DISCARDED_PREVIEW_TEXT,
  type EditTarget,
  isCommitted,
  type OutboundMessage,
  PREVIEW_DELIVERY_PREFIX,
  type ReconcileResult,
} from "./ports/channel.js";
export { type Clock, sleep, type TimerHandle } from "./ports/clock.js";
export {
  DEFAULT_KEEP_DELIVERIES,
  type DeliveryLog,
  type DeliveryLogOptions,
  type DeliveryRecord,
  MemoryDeliveryLog,
} from "./ports/delivery-log.js";
export type {
  ModelMessage,
  ModelProvider,
  ModelReply,
  ModelRequest,
  ModelUsage,
  ToolCallRequest,
} from "./ports/model.js";
export type { Acceptance, InboxEntry, InboxMessage, SessionCluster } from "./ports/session-cluster.js";
export * from "./ports/store.js";
export type { JsonSchema, ToolContext, ToolDefinition, ToolSpec } from "./ports/tool.js";
export { loadScenario, parseScenario, ScenarioError } from "./scenario/load.js";
export { runScenario, type ScenarioResult } from "./scenario/runner.js";
