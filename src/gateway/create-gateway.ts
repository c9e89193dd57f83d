import { nanoid } from "nanoid";
import type { AnyActorRef, InspectionEvent } from "xstate";
import { BUILTIN_TOOL_NAMES, builtinTools } from "../actors/builtin-tools.js";
import { createCallModel } from "../actors/call-model.js";
import { createDeliver } from "../actors/deliver.js";
import type { ActorDeps } from "../actors/deps.js";
import { createDetectStale } from "../actors/detect-stale.js";
import { createLaneSlot } from "../actors/lane-slot.js";
import { createResetTranscript } from "../actors/reset-transcript.js";
import { createRunTool } from "../actors/run-tool.js";
import type { Channel } from "../adapters/channel.js";
import type { Clock } from "../adapters/clock.js";
import { MemoryStore } from "../adapters/memory-store.js";
import type { ModelProvider } from "../adapters/model.js";
import type { TranscriptStore } from "../adapters/store.js";
import { SystemClock } from "../adapters/system-clock.js";
import type { ToolDefinition } from "../adapters/tool.js";
import { compileTool } from "../adapters/tool-schema.js";
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from "../config.js";
import { EventHub, type EventListener, type TillerEvent } from "../events.js";
import { createLaneScheduler, type LaneScheduler } from "../lanes/lane-scheduler.js";
import { createLogger, type Logger, neverThrowing } from "../logger.js";
import { runMachine } from "../machines/run.machine.js";
import { sessionMachine } from "../machines/session.machine.js";
import { checkAdapters } from "./check-adapters.js";
import { type MessageExplanation, MessageLog } from "./message-log.js";
import { createReceive } from "./receive.js";
import { resumeSessions } from "./resume-sessions.js";
import { createRunSubagent } from "./run-subagent.js";
import { ScheduleRunner, type ScheduleView } from "./schedule-runner.js";
import { SessionPersistence } from "./session-persistence.js";
import { SessionRegistry } from "./session-registry.js";
import { TranscriptWriter } from "./transcript-writer.js";
import { createTrigger, type TriggerAck, type TriggerRequest } from "./trigger.js";
import { type InboundMessage, stateName } from "./validate-inbound.js";

export interface GatewayOptions {
  config?: GatewayConfigInput | GatewayConfig;
  model: ModelProvider;
  tools?: ToolDefinition[];
  /** Channels by name; an inbound message's `channel` picks the one its replies go through. */
  channels: Record<string, Channel>;
  store?: TranscriptStore;
  clock?: Clock;
  inspect?: (event: InspectionEvent) => void;
  logger?: Logger;
  /** Names each turn's run; must never repeat for a session (default: the session key + a random id). */
  newRunId?: (session: string) => string;
  /**
   * The lane scheduler to ask for slots (default: an in-process one with `config.lanes`), such as the
   * cluster lanes of several processes on one PostgreSQL (docs/postgres.md). Its `lane.*` events join the
   * gateway's stream when it has `observe`.
   */
  lanes?: LaneScheduler;
}

export interface SessionInspection {
  state: string;
  run: { runId: string; state: string; passes: number; currentTool?: string } | null;
  queue: Array<{ kind: string; messageIds: string[] }>;
  lane: { active: number; queued: number; capacity: number } | null;
  transcriptLength: number;
}

/**
 * Creates a gateway: the composition root that provides real actors and adapters to the machines,
 * and the public API of CONTRACTS.md §1.
 *
 * @example
 * ```ts
 * const gateway = createGateway({ model, channels: { telegram }, config: { queue: { mode: "steer" } } });
 * await gateway.start();
 * const ack = await gateway.receive({ session: "telegram:42", channel: "telegram", text: "hi", id: "m1" });
 * ```
 */
export function createGateway(options: GatewayOptions) {
  const config = parseConfig(options.config ?? {});
  const clock = options.clock ?? new SystemClock();
  const logger = neverThrowing(options.logger ?? createLogger());
  const store = options.store ?? new MemoryStore({ now: () => clock.now() });
  const hub = new EventHub();
  const messageLog = new MessageLog(config.limits.explainMessages);
  const writer = new TranscriptWriter(store);
  let draining = false;

  function emit(type: string, fields: Record<string, unknown>): void {
    const event: TillerEvent = { at: clock.now(), type, ...fields };
    messageLog.observe(event);
    logger.debug(event, type);
    hub.emit(event);
  }

  const persistence = new SessionPersistence({ writer, clock, config, logger, emit });

  const onLaneEvent = (event: TillerEvent) => {
    messageLog.observe(event);
    hub.emit(event);
  };
  const lanes: LaneScheduler =
    options.lanes ??
    createLaneScheduler({
      capacity: config.lanes,
      warnAfterMs: config.warnAfterMs,
      agingMs: config.laneAgingMs,
      clock,
      logger,
      // The scheduler's own machine shows up in the same inspector as the sessions and runs.
      ...(options.inspect ? { inspect: options.inspect } : {}),
      onEvent: onLaneEvent,
    });
  options.lanes?.observe?.(onLaneEvent);

  checkAdapters(options, BUILTIN_TOOL_NAMES);
  const channelNames = Object.keys(options.channels);
  const deps: ActorDeps = {
    config,
    clock,
    logger,
    model: options.model,
    tools: new Map(),
    toolSchemas: new Map(),
    channelFor(session, preferred) {
      const name =
        (preferred !== undefined && preferred in options.channels ? preferred : undefined) ??
        registry.get(session)?.channel ??
        channelNames[0]!;
      const channel = options.channels[name] ?? options.channels[channelNames[0]!]!;
      return { name, channel };
    },
    writer,
    lanes,
    newRunId: options.newRunId ?? ((session) => `${session}#${nanoid(10)}`),
    emit,
    runFacts: new Map(),
    runSubagent: (parent, subagent) => runSubagent(parent, subagent),
  };
  for (const tool of builtinTools(deps)) registerTool(deps, tool, tool.name);
  for (const [index, tool] of (options.tools ?? []).entries()) registerTool(deps, tool, `tools[${index}]`);

  const providedRun = runMachine.provide({
    actors: {
      callModel: createCallModel(deps),
      runTool: createRunTool(deps),
      detectStale: createDetectStale(deps),
    },
  });
  const providedSession = sessionMachine.provide({
    actors: {
      run: providedRun,
      laneSlot: createLaneSlot(deps),
      deliver: createDeliver(deps),
      resetTranscript: createResetTranscript(deps),
    },
  });
  const registry = new SessionRegistry({
    config,
    clock,
    logger,
    writer,
    persistence,
    machine: providedSession,
    inspect: options.inspect,
    emit,
  });

  const receive = createReceive({
    config,
    deps,
    registry,
    persistence,
    channelNames,
    isDraining: () => draining,
    emit,
  });

  function inspectSession(key: string): SessionInspection | undefined {
    const entry = registry.get(key);
    if (!entry) return undefined;
    const snapshot = entry.actor?.getSnapshot();
    const runRef = snapshot?.children.run as AnyActorRef | undefined;
    const runSnapshot = runRef?.getSnapshot();
    const lane = lanes.snapshot().lanes[`session:${key}`] ?? null;
    return {
      state: snapshot ? stateName(snapshot.value) : "idle",
      run: runSnapshot
        ? {
            runId: runSnapshot.context.input.runId,
            state: stateName(runSnapshot.value),
            passes: runSnapshot.context.passes,
            ...(runSnapshot.context.pendingCalls[runSnapshot.context.toolIndex]
              ? { currentTool: runSnapshot.context.pendingCalls[runSnapshot.context.toolIndex].name }
              : {}),
          }
        : null,
      queue: (snapshot?.context.queue ?? []).map((item) => ({
        kind: item.kind,
        messageIds: item.kind === "recovery" ? [] : item.messages.map((message) => message.id),
      })),
      lane,
      transcriptLength: writer.lastSeq(key),
    };
  }

  const trigger = createTrigger({
    config,
    deps,
    registry,
    persistence,
    channelNames,
    isDraining: () => draining,
    emit,
  });

  const runSubagent = createRunSubagent({ deps, hub, registry, trigger, emit });
  const scheduleRunner = new ScheduleRunner({
    schedules: config.schedules,
    clock,
    store,
    logger,
    trigger: (request) => trigger(request),
    emit,
  });

  return {
    config,
    clock,
    store,
    lanes,
    /** The config's schedules: `list()` shows each one's next and last run. */
    schedules: { list: (): ScheduleView[] => scheduleRunner.list() },
    /**
     * Starts a turn nobody typed (`cron`, `heartbeat`, `manual`, `subagent`, ...) in a session, in the
     * lane and at the priority its trigger maps to; the ack says whether it started, queued or was dropped.
     */
    trigger: (request: TriggerRequest): Promise<TriggerAck> => trigger(request),
    async start(): Promise<void> {
      await resumeSessions({ store, writer, config, persistence, registry, channelNames, emit });
      await scheduleRunner.start();
      emit("gateway.started", {});
    },
    receive,
    /** Every decision from now on, as an async iterator (DESIGN.md §8). */
    events(signal?: AbortSignal): AsyncGenerator<TillerEvent> {
      return hub.stream(signal);
    },
    /** Synchronous subscription to the same stream; returns the unsubscribe function. */
    subscribe(listener: EventListener): () => void {
      return hub.subscribe(listener);
    },
    inspectSession,
    /** The keys of every session this process has seen since it started (stored ones: `store.sessions()`). */
    sessionKeys(): string[] {
      return [...registry.keys()];
    },
    /** "What happened to my message?", from the event stream. */
    explain(session: string, messageId: string): MessageExplanation | undefined {
      return messageLog.explain(session, messageId);
    },
    /** True while real I/O (store writes) is in flight. */
    get isBusy(): boolean {
      return writer.isBusy;
    },
    get isDraining(): boolean {
      return draining;
    },
    async drain(): Promise<void> {
      draining = true;
      scheduleRunner.stop();
      emit("gateway.draining", {});
      await lanes.drain();
    },
    resume(): void {
      draining = false;
      lanes.resume();
      for (const [, entry] of registry.live()) entry.actor?.send({ type: "session.resume" });
      scheduleRunner.resume();
    },
    async stop(): Promise<void> {
      draining = true;
      scheduleRunner.stop();
      await lanes.drain();
      registry.stopAll();
      await store.close();
    },
  };
}

/** Adds a tool with its schema compiled once; `field` names it in a ConfigError. */
function registerTool(deps: ActorDeps, tool: ToolDefinition, field: string): void {
  deps.tools.set(tool.name, tool);
  deps.toolSchemas.set(tool.name, compileTool(tool, field));
}

export type Gateway = ReturnType<typeof createGateway>;
export type { InboundMessage };
