import { nanoid } from "nanoid";
import { BUILTIN_TOOL_NAMES, builtinTools } from "../actors/builtin-tools.js";
import { createCallModel } from "../actors/call-model.js";
import { createDeliver } from "../actors/deliver.js";
import type { ActorDeps } from "../actors/deps.js";
import { createDetectStale } from "../actors/detect-stale.js";
import { createLaneSlot } from "../actors/lane-slot.js";
import { createResetTranscript } from "../actors/reset-transcript.js";
import { createRunTool } from "../actors/run-tool.js";
import { send } from "../actors/send.js";
import { StreamPreviews } from "../actors/stream-previews.js";
import { MemoryStore } from "../adapters/memory-store.js";
import { SystemClock } from "../adapters/system-clock.js";
import { compileTool } from "../adapters/tool-schema.js";
import { TranscriptWriter } from "../adapters/transcript-writer.js";
import { parseConfig } from "../config.js";
import { type EmitEvent, EventHub, type EventListener, type TillerEvent, tillerEvent } from "../events.js";
import { createLaneScheduler, type LaneScheduler } from "../lanes/lane-scheduler.js";
import { createLogger, neverThrowing } from "../logger.js";
import { runMachine } from "../machines/run.machine.js";
import { sessionMachine } from "../machines/session.machine.js";
import type { CommitmentProposal } from "../policy/commitment-fields.js";
import { ackVisibilityFor } from "../policy/delivery.js";
import type { ToolDefinition } from "../ports/tool.js";
import { checkAdapters } from "./check-adapters.js";
import { type CommitmentFilter, createCommitments } from "./commitments/commitments.js";
import { type MessageExplanation, MessageLog } from "./explain/message-log.js";
import type { Gateway, GatewayOptions, SessionInspection } from "./gateway.types.js";
import { createClusterInbox } from "./inbound/cluster-inbox.js";
import { createReceive } from "./inbound/receive.js";
import { createTrigger, type TriggerAck, type TriggerRequest } from "./inbound/trigger.js";
import type { InboundMessage } from "./inbound/validate-inbound.js";
import { ScheduleRunner, type ScheduleView } from "./schedules/schedule-runner.js";
import { adoptSession, settleSession } from "./sessions/cluster-handover.js";
import { inspectSession } from "./sessions/inspect-session.js";
import { resumeSessions } from "./sessions/resume-sessions.js";
import { SessionPersistence } from "./sessions/session-persistence.js";
import { SessionRegistry } from "./sessions/session-registry.js";
import { createRunSubagent } from "./subagents/run-subagent.js";
import { SubagentNumbers } from "./subagents/subagent-numbers.js";
import { createTurnTracer } from "./telemetry/turn-tracer.js";
import { TurnUsage } from "./turn-usage.js";
import { TypingIndicator } from "./typing-indicator.js";

/**
 * Creates a gateway: the composition root that provides real actors and adapters to the machines,
 * and the public API described by {@link Gateway}.
 *
 * @example
 * ```ts
 * const gateway = createGateway({ model, channels: { telegram }, config: { queue: { mode: "steer" } } });
 * await gateway.start();
 * const ack = await gateway.receive({ session: "telegram:42", channel: "telegram", text: "hi", id: "m1" });
 * ```
 */
export function createGateway(options: GatewayOptions): Gateway {
  const config = parseConfig(options.config ?? {});
  const clock = options.clock ?? new SystemClock();
  const logger = neverThrowing(options.logger ?? createLogger());
  const store = options.store ?? new MemoryStore({ now: () => clock.now() });
  const hub = new EventHub();
  const messageLog = new MessageLog(config.limits.explainMessages);
  const writer = new TranscriptWriter(store);
  let draining = false;
  let observeCommitments: (event: TillerEvent) => void = () => {};
  const tracing = createTurnTracer(options.telemetry);
  let observeChannelEdge: (event: TillerEvent) => void = () => {};

  const turnUsage = new TurnUsage();

  function publish(raw: TillerEvent): void {
    const event = turnUsage.annotate(raw);
    messageLog.observe(event);
    tracing.observe(event);
    observeCommitments(event);
    observeChannelEdge(event);
    logger.debug(event, event.type);
    hub.emit(event);
    if (event.type === "steer.missed") correctSteeredAck(event.session, event.messageIds);
  }

  /** Where acks are visible, a `steered` ack that did not hold is followed by the truth (once each). */
  function correctSteeredAck(session: string, messageIds: readonly string[]): void {
    const channel = registry.get(session)?.channel;
    // Only where the `steered` ack itself was shown (`all`); under `problems` it stayed quiet.
    if (!channel || ackVisibilityFor(config.delivery.visibleAcks, channel) !== "all") return;
    const text =
      "The reply I was writing finished before it could take your message into account; I answer it next.";
    for (const id of messageIds)
      void send(deps, session, text, "ack", { deliveryId: `ack:${session}:${id}:missed` });
  }
  const emit: EmitEvent = (type, fields, at) => publish(tillerEvent(type, at ?? clock.now(), fields));

  const persistence = new SessionPersistence({
    writer,
    clock,
    config,
    logger,
    emit,
    onStoredRecords: (session, records) => messageLog.seed(session, records),
  });

  const onLaneEvent = (event: TillerEvent) => {
    messageLog.observe(event);
    tracing.observe(event);
    hub.emit(event);
  };
  const lanes: LaneScheduler =
    options.lanes ??
    createLaneScheduler({
      capacity: config.lanes,
      groups: config.laneGroups,
      warnAfterMs: config.warnAfterMs,
      agingMs: config.laneAgingMs,
      clock,
      logger,
      // The scheduler's own machine shows up in the same inspector as the sessions and runs.
      ...(options.inspect ? { inspect: options.inspect } : {}),
      onEvent: onLaneEvent,
      // The explain log reads no lane event: the per-task ones are built only for subscribers and spans.
      isObserved: () => hub.isObserved || tracing.isOn(),
    });
  options.lanes?.observe?.(onLaneEvent);

  checkAdapters(options, BUILTIN_TOOL_NAMES);
  const channelNames = Object.keys(options.channels);
  // Each send gets a `tiller.deliver` span while tracing is on.
  const channels = Object.fromEntries(
    Object.entries(options.channels).map(([name, channel]) => [name, tracing.channel(channel)]),
  );
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
      const channel = channels[name] ?? channels[channelNames[0]!]!;
      return { name, channel };
    },
    writer,
    lanes,
    newRunId: options.newRunId ?? ((session) => `${session}#${nanoid(10)}`),
    emit,
    resumedKeepsPriority: options.cluster !== undefined,
    async stateDurable(session, ids) {
      // After the step that changed the session, whose state its subscriber has just handed over.
      await null;
      const entry = registry.get(session);
      if (!entry) return;
      persistence.flush(session, entry);
      await persistence.covered(entry, ids);
    },
    runSubagent: (parent, subagent) => runSubagent(parent, subagent),
  };
  // What a chat channel shows while a turn runs: "typing…", and drafts the final replaces.
  const typing = new TypingIndicator(deps);
  const previews = new StreamPreviews(deps);
  deps.previews = previews;
  observeChannelEdge = (event) => {
    typing.observe(event);
    previews.observe(event);
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
  writer.onStored = (session, records) => {
    const entry = registry.get(session);
    if (!entry?.unstored?.size) return;
    const ids: string[] = [];
    for (const record of records) if (record.role === "user") ids.push(record.messageId);
    persistence.stored(session, entry, ids);
  };
  const registry = new SessionRegistry({
    config,
    clock,
    logger,
    writer,
    persistence,
    machine: providedSession,
    inspect: options.inspect,
    emit,
    publish,
    onIdle: (key) => clusterInbox?.idle(key),
  });

  const commitments = createCommitments({
    deps,
    store,
    hooks: {
      ...(options.extractCommitments ? { extractCommitments: options.extractCommitments } : {}),
      ...(options.commitmentSnapshot ? { commitmentSnapshot: options.commitmentSnapshot } : {}),
      ...(options.newCommitmentId ? { newCommitmentId: options.newCommitmentId } : {}),
    },
    ...(options.inspect ? { inspect: options.inspect } : {}),
    isSessionBusy(session) {
      const inspection = inspect(session);
      return inspection !== undefined && (inspection.state !== "idle" || inspection.queue.length > 0);
    },
  });
  observeCommitments = (event) => commitments.observe(event);
  deps.proposeCommitment = (session, args, origin) => commitments.propose(session, args, origin);

  // What receive() and trigger() both admit through.
  const admission = {
    config,
    deps,
    registry,
    persistence,
    channelNames,
    isDraining: () => draining,
    emit,
    isObserved: () => hub.isObserved || logger.isLevelEnabled?.("debug") === true,
  };
  const localReceive = createReceive({ ...admission, sharedDedupe: !options.cluster });
  const resumeDeps = { store, writer, config, persistence, registry, channelNames, emit };
  // Listed through the writer: the listing counts as I/O in flight (the simulated clock waits for it).
  const subagentNumbers = new SubagentNumbers({ sessions: (prefix) => writer.storedSessions(prefix) });
  /** Nothing runs or waits for the session in this process. */
  function isIdle(session: string): boolean {
    const snapshot = registry.get(session)?.actor?.getSnapshot();
    return !snapshot || (snapshot.value === "idle" && snapshot.context.queue.length === 0);
  }
  const handover = { registry, writer, persistence, subagentNumbers, resumeDeps, emit, isIdle };
  // Several processes: messages go through the cluster's inbox to the session's owner.
  const clusterInbox = options.cluster
    ? createClusterInbox({
        cluster: options.cluster,
        config,
        channelNames,
        local: localReceive,
        localTrigger: (request, extras) => trigger(request, extras),
        isIdle,
        adopt: (session) => adoptSession(handover, session),
        forgetLive(session) {
          // Stopping the actor stops its run; the lane's fence already refuses the run's writes.
          registry.stop(session);
          writer.forget(session);
        },
        settle: (session) => settleSession(handover, session),
        isDraining: () => draining,
        now: () => clock.now(),
        emit,
        logger,
      })
    : undefined;
  const receive = clusterInbox ? clusterInbox.receive : localReceive;

  function inspect(key: string): SessionInspection | undefined {
    return inspectSession(key, { registry, lanes, writer });
  }

  const trigger = createTrigger(admission);

  // Several processes: a turn nobody typed goes through the inbox too; a subagent's child starts on
  // its parent's process, which owns the child's key while it runs.
  const publicTrigger = (request: TriggerRequest): Promise<TriggerAck> =>
    clusterInbox ? clusterInbox.trigger(request) : trigger(request);
  const runSubagent = createRunSubagent({
    deps,
    hub,
    registry,
    store,
    numbers: subagentNumbers,
    trigger: (request, extras) =>
      clusterInbox ? clusterInbox.startChild(request, extras) : trigger(request, extras),
    emit,
  });
  const scheduleRunner = new ScheduleRunner({
    schedules: config.schedules,
    clock,
    store,
    logger,
    trigger: (request) => publicTrigger(request),
    emit,
  });

  return {
    config,
    clock,
    store,
    lanes,
    ...(options.cluster ? { cluster: options.cluster } : {}),
    /** The config's schedules: `list()` shows each one's next and last run. */
    schedules: { list: (): ScheduleView[] => scheduleRunner.list() },
    /**
     * Starts a turn nobody typed (`cron`, `heartbeat`, `manual`, `subagent`, ...) in a session, in the
     * lane and at the priority its trigger maps to; the ack says whether it started, queued or was dropped.
     */
    trigger: publicTrigger,
    async start(): Promise<void> {
      // In a cluster, sessions left with work are taken over one by one, by whichever process is free.
      if (clusterInbox) clusterInbox.start();
      else await resumeSessions(resumeDeps);
      await commitments.start();
      await scheduleRunner.start();
      emit("gateway.started", {});
    },
    receive,
    events(signal?: AbortSignal): AsyncGenerator<TillerEvent> {
      return hub.stream(signal);
    },
    subscribe(listener: EventListener): () => void {
      return hub.subscribe(listener);
    },
    inspectSession: inspect,
    /** The keys of every session this process has seen since it started (stored ones: `store.sessions()`). */
    sessionKeys(): string[] {
      return [...registry.keys()];
    },
    explain(session: string, messageId: string): MessageExplanation | undefined {
      return messageLog.explain(session, messageId);
    },
    /**
     * Commitments (docs/commitments.md) for operators: `list({ session?, status? })` (oldest first) and
     * `dismiss(id)` (the commitment after it, undefined for an unknown id).
     */
    commitments: {
      list: (filter?: CommitmentFilter) => commitments.list(filter),
      dismiss: (id: string) => commitments.dismiss(id),
      /**
       * Proposes a commitment for `session` from the gateway's own code, through the same checks as
       * the `commitment` tool (`source` defaults to "api"; `sourceMessageId` anchors its review).
       */
      propose: (
        session: string,
        proposal: CommitmentProposal,
        origin: { source?: string; sourceMessageId?: string; sourceRunId?: string } = {},
      ) =>
        commitments.propose(session, proposal, {
          source: origin.source ?? "api",
          ...(origin.sourceMessageId ? { messageId: origin.sourceMessageId } : {}),
          ...(origin.sourceRunId ? { runId: origin.sourceRunId } : {}),
        }),
    },
    /** A commitment's story: its stored record and what happened to it; undefined for an unknown id. */
    explainCommitment(id: string) {
      return commitments.explain(id);
    },
    get isBusy(): boolean {
      return writer.isBusy || commitments.book.isBusy || scheduleRunner.isBusy;
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
      clusterInbox?.stop();
      commitments.stop();
      scheduleRunner.stop();
      typing.stop();
      await lanes.drain();
      registry.stopAll();
      // The turns' last state saves are still on their way: the store closes once they have landed.
      await registry.settled();
      await store.close();
      emit("gateway.stopped", {});
    },
  };
}

export type { Gateway, GatewayOptions, InboundMessage, SessionInspection };

/** Adds a tool with its schema compiled once; `field` names it in a ConfigError. */
function registerTool(deps: ActorDeps, tool: ToolDefinition, field: string): void {
  deps.tools.set(tool.name, tool);
  deps.toolSchemas.set(tool.name, compileTool(tool, field));
}
