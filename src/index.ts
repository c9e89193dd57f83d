/**
 * Tiller: the orchestration core of a chat-agent gateway, built as XState v5 actors.
 *
 * @example
 * ```ts
 * import { createGateway, LoopbackChannel, ScriptedModel, SystemClock } from "tiller";
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
export { type Gateway, type GatewayOptions, type InboundMessage, type SessionInspection, createGateway } from "./gateway.js";
export type { Ack } from "./ack.js";
export { type LaneScheduler, type LaneSchedulerOptions, type LaneSnapshot, type RunOptions, createLaneScheduler } from "./lanes/lane-scheduler.js";
export * from "./errors.js";
export { type GatewayConfig, type GatewayConfigInput, parseConfig } from "./config.js";
export { EventHub, type TillerEvent } from "./events.js";
export type { MessageExplanation } from "./explain.js";
export { type Logger, createLogger, silentLogger } from "./logger.js";
export { type Clock, type TimerHandle, sleep } from "./adapters/clock.js";
export { SystemClock } from "./adapters/system-clock.js";
export { SimulatedClock } from "./adapters/simulated-clock.js";
export type { Channel, DeliveryReceipt, OutboundMessage } from "./adapters/channel.js";
export { LoopbackChannel } from "./adapters/loopback-channel.js";
export type { ModelProvider, ModelReply, ModelRequest } from "./adapters/model.js";
export { ScriptedModel, type ScriptedRule } from "./adapters/scripted-model.js";
export type { ToolContext, ToolDefinition } from "./adapters/tool.js";
export * from "./adapters/store.js";
export { MemoryStore } from "./adapters/memory-store.js";
export { JsonlStore } from "./adapters/jsonl-store.js";
export { laneSchedulerMachine } from "./machines/lane-scheduler.machine.js";
export { laneEntryMachine } from "./machines/lane-entry.machine.js";
export { runMachine } from "./machines/run.machine.js";
export { sessionMachine } from "./machines/session.machine.js";
export { laneForNested, priorityForTrigger, type Priority } from "./policy/lane-priority.js";
export { parseQueueMode, resolveQueueSetting, type QueueMode } from "./policy/queue-mode.js";
export { assessDraft, DEFAULT_COMPLAINT_PATTERNS } from "./policy/stale-reply.js";
export { loadScenario, parseScenario, ScenarioError } from "./scenario/load.js";
export { runScenario, type ScenarioResult } from "./scenario/runner.js";
