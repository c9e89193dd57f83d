import { nanoid } from "nanoid";
import { type AnyActorRef, createActor, type InspectionEvent } from "xstate";
import { type Ack, composeAck, type RunView } from "./ack.js";
import { builtinTools } from "./actors/builtin-tools.js";
import { createCallModel } from "./actors/call-model.js";
import { createDeliver, send } from "./actors/deliver.js";
import type { ActorDeps } from "./actors/deps.js";
import { createLaneSlot } from "./actors/lane-slot.js";
import { createResetTranscript } from "./actors/reset-transcript.js";
import { createRunTool } from "./actors/run-tool.js";
import type { Channel } from "./adapters/channel.js";
import type { Clock, TimerHandle } from "./adapters/clock.js";
import { MemoryStore } from "./adapters/memory-store.js";
import type { ModelProvider } from "./adapters/model.js";
import type { TranscriptStore } from "./adapters/store.js";
import { SystemClock } from "./adapters/system-clock.js";
import type { ToolDefinition } from "./adapters/tool.js";
import { type GatewayConfig, type GatewayConfigInput, parseConfig, queueLayers } from "./config.js";
import { ConfigError } from "./errors.js";
import { EventHub, type EventListener, type TillerEvent } from "./events.js";
import { type MessageExplanation, MessageLog } from "./explain.js";
import { type InboundMessage, pruneSeen, stateName, validateInbound } from "./inbound.js";
import { createLaneScheduler, type LaneScheduler } from "./lanes/lane-scheduler.js";
import { createLogger, type Logger } from "./logger.js";
import { runMachine } from "./machines/run.machine.js";
import { type SessionActorRef, sessionMachine } from "./machines/session.machine.js";
import type { SessionDecision, SessionInput } from "./machines/session.types.js";
import { parseControl } from "./policy/control.js";
import { parseQueueMode, resolveQueueSetting } from "./policy/queue-mode.js";
import { type PersistedSession, planResume } from "./resume.js";
import { type SessionMemory, SessionPersistence } from "./session-persistence.js";
import { TranscriptWriter } from "./transcript-writer.js";

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
  const logger = options.logger ?? createLogger();
  const store = options.store ?? new MemoryStore({ now: () => clock.now() });
  const hub = new EventHub();
  const messageLog = new MessageLog();
  const sessions = new Map<string, SessionMemory>();
  const writer = new TranscriptWriter(store);
  /** Idle sessions whose actor is kept alive, least recently used first (a Map keeps insertion order). */
  const liveIdle = new Map<string, SessionMemory>();
  let draining = false;

  function emit(type: string, fields: Record<string, unknown>): void {
    const event: TillerEvent = { at: clock.now(), type, ...fields };
    messageLog.observe(event);
    logger.debug(event, type);
    hub.emit(event);
  }

  const persistence = new SessionPersistence({ writer, clock, config, logger, emit });

  const lanes: LaneScheduler = createLaneScheduler({
    capacity: config.lanes,
    warnAfterMs: config.warnAfterMs,
    clock,
    logger,
    onEvent: (event) => {
      messageLog.observe(event);
      hub.emit(event);
    },
  });

  const channelNames = Object.keys(options.channels);
  if (channelNames.length === 0) throw new ConfigError("channels", "at least one channel", options.channels);
  const deps: ActorDeps = {
    config,
    clock,
    logger,
    model: options.model,
    tools: new Map(),
    channelFor(session) {
      const name = sessions.get(session)?.channel ?? channelNames[0]!;
      const channel = options.channels[name] ?? options.channels[channelNames[0]!]!;
      return { name, channel };
    },
    writer,
    lanes,
    newRunId: options.newRunId ?? ((session) => `${session}#${nanoid(10)}`),
    emit,
    runFacts: new Map(),
  };
  for (const tool of [...builtinTools(deps), ...(options.tools ?? [])]) deps.tools.set(tool.name, tool);

  const providedRun = runMachine.provide({
    actors: { callModel: createCallModel(deps), runTool: createRunTool(deps) },
  });
  const providedSession = sessionMachine.provide({
    actors: {
      run: providedRun,
      laneSlot: createLaneSlot(deps),
      deliver: createDeliver(deps),
      resetTranscript: createResetTranscript(deps),
    },
  });

  function memory(key: string, channel: string): SessionMemory {
    let entry = sessions.get(key);
    if (!entry) {
      entry = {
        actor: null,
        subscription: null,
        channel,
        override: null,
        seen: new Map(),
        turnSeq: 0,
        savedFrom: null,
        savedEmpty: true,
        saving: Promise.resolve(),
      };
      sessions.set(key, entry);
    }
    return entry;
  }

  function sessionActor(
    key: string,
    entry: SessionMemory,
    restored?: SessionInput["restored"],
  ): SessionActorRef {
    if (entry.actor) {
      liveIdle.delete(key);
      return entry.actor;
    }
    writer.keepWindow(key, true);
    const actor = createActor(providedSession, {
      input: { key, turnSeq: entry.turnSeq, ...(restored ? { restored } : {}) },
      // Delayed transitions (the collect window) run on the gateway's clock, simulated or not.
      clock: {
        setTimeout: (callback: () => void, ms: number) => clock.setTimeout(callback, ms),
        clearTimeout: (handle: unknown) => clock.clearTimeout(handle as TimerHandle),
      },
      id: `session:${key}`,
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    const watched = new WeakSet<AnyActorRef>();
    actor.on("*", (event) => emit(event.type, { ...event, session: key }));
    entry.subscription = actor.subscribe({
      next(snapshot) {
        const run = snapshot.children.run as AnyActorRef | undefined;
        if (run && !watched.has(run)) {
          watched.add(run);
          const runId = snapshot.context.runId ?? undefined;
          run.on("*", (event: { type: string }) => emit(event.type, { ...event, session: key, runId }));
        }
        persistence.persist(key, entry, snapshot);
        if (snapshot.value === "idle" && snapshot.context.queue.length === 0) rest(key, entry);
      },
      error(error) {
        logger.error({ session: key, error: String(error) }, "session.crashed");
        emit("session.crashed", { session: key, error: String(error) });
      },
    });
    entry.actor = actor;
    actor.start();
    return actor;
  }

  /** Resumes every session a previous process left with work: exactly once, in the background lane. */
  async function resumeSessions(): Promise<void> {
    for (const key of await store.sessions()) {
      const state = (await store.loadState(key)) as PersistedSession | null;
      if (state?.version !== 1) continue;
      const records = await writer.readWindow(key);
      const plan = planResume(state, records, config.delivery.visibleReplies);
      await writer.append(key, plan.repairs);
      for (const note of plan.notes) emit("session.resumed", { session: key, note });
      const entry = memory(key, channelNames[0]!);
      entry.turnSeq = state.turnSeq;
      entry.savedEmpty = false;
      // Channels redeliver what a dead process may not have acknowledged: ids this session already
      // accepted (stored, or owned by the turn and queue being resumed) stay duplicates.
      await persistence.rememberStoredIds(key, entry);
      for (const item of [...(state.pending ? [state.pending] : []), ...state.queue])
        if ("messages" in item) for (const message of item.messages) entry.seen.set(message.id, message.at);
      const channel = records.findLast((record) => record.role === "user")?.channel;
      if (channel && options.channels[channel]) entry.channel = channel;
      if (plan.queue.length === 0) {
        await writer.saveState(key, null);
        continue;
      }
      sessionActor(key, entry, { pending: null, queue: plan.queue, summaries: plan.summaries });
    }
  }

  /**
   * An idle session joins the live-idle set; past `limits.liveIdleSessions` the least recently used one
   * is retired, so thousands of sessions stay cheap while the busy ones start turns at once.
   */
  function rest(key: string, entry: SessionMemory): void {
    liveIdle.delete(key);
    liveIdle.set(key, entry);
    while (liveIdle.size > config.limits.liveIdleSessions) {
      const [oldestKey, oldest] = liveIdle.entries().next().value as [string, SessionMemory];
      liveIdle.delete(oldestKey);
      retire(oldestKey, oldest);
    }
  }

  /** A retired session keeps only its small memory; the actor is stopped (after the current step). */
  function retire(key: string, entry: SessionMemory): void {
    queueMicrotask(() => {
      const actor = entry.actor;
      if (!actor || liveIdle.has(key)) return;
      const snapshot = actor.getSnapshot();
      if (snapshot.value !== "idle" || snapshot.context.queue.length > 0) return;
      entry.turnSeq = snapshot.context.turnSeq;
      entry.subscription?.unsubscribe();
      actor.stop();
      entry.actor = null;
      entry.subscription = null;
      writer.keepWindow(key, false);
    });
  }

  async function receive(inbound: InboundMessage): Promise<Ack> {
    const message = validateInbound(inbound, config);
    const entry = memory(message.session, message.channel);
    entry.channel = message.channel;
    // The window read for duplicate detection is the one the session's first turn starts from.
    if (!entry.actor) writer.keepWindow(message.session, true);
    await persistence.rememberStoredIds(message.session, entry);
    const now = clock.now();
    const layers = queueLayers(config, message.channel);
    const inline = message.mode === undefined ? undefined : parseQueueMode(message.mode);
    const setting = resolveQueueSetting({ inline, session: entry.override, ...layers });
    const owned = { id: message.id, text: message.text, channel: message.channel, at: now };

    let decision: SessionDecision;
    let runBefore: RunView | undefined;
    const oversized = message.text.length > config.limits.maxMessageChars;
    const control = parseControl(message.text);
    pruneSeen(entry, now, config.limits.dedupeWindowMs);
    if (entry.seen.has(message.id)) {
      decision = { messageId: message.id, disposition: "duplicate", setting };
    } else if (oversized) {
      decision = {
        messageId: message.id,
        disposition: "rejected",
        setting,
        reason: `the message is ${message.text.length} characters; the limit is ${config.limits.maxMessageChars}`,
      };
    } else if (message.mode !== undefined && inline === undefined) {
      decision = {
        messageId: message.id,
        disposition: "rejected",
        setting,
        reason: `unknown queue mode "${message.mode}"`,
      };
    } else if (control) {
      entry.seen.set(message.id, now);
      return controlAck(message.session, entry, owned.id, control, setting);
    } else if (draining) {
      decision = {
        messageId: message.id,
        disposition: "rejected",
        setting,
        reason: "the gateway is draining",
      };
    } else {
      entry.seen.set(message.id, now);
      const actor = sessionActor(message.session, entry);
      // What the run was doing when the message arrived: an interrupt changes it at once.
      runBefore = runView(actor);
      actor.send({ type: "session.message", message: owned, setting });
      decision = actor.getSnapshot().context.lastDecision ?? {
        messageId: message.id,
        disposition: "rejected",
        setting,
      };
      // Acknowledged means durable: the message is in the saved state (or the transcript) first.
      await entry.saving;
    }
    // Nothing runs for it (a duplicate, a rejection): a session without an actor keeps no window.
    if (!entry.actor) writer.keepWindow(message.session, false);
    return finishAck(message.session, entry, decision, runBefore);
  }

  function runView(actor: SessionActorRef | null): RunView | undefined {
    const runRef = actor?.getSnapshot().children.run as AnyActorRef | undefined;
    if (!runRef) return undefined;
    const runSnapshot = runRef.getSnapshot();
    return { state: stateName(runSnapshot.value), context: runSnapshot.context };
  }

  function finishAck(
    session: string,
    entry: SessionMemory,
    decision: SessionDecision,
    runBefore?: RunView,
  ): Ack {
    const snapshot = entry.actor?.getSnapshot();
    const run =
      decision.disposition === "interrupted"
        ? runBefore
        : decision.disposition === "steered"
          ? runView(entry.actor)
          : undefined;
    const position =
      snapshot && decision.disposition === "queued" ? snapshot.context.queue.length : undefined;
    const ack = composeAck(session, decision, run, position);
    emit("message.acked", { ...ack, session });
    if (isAckVisible(entry.channel)) void send(deps, session, ack.text, "ack");
    return ack;
  }

  function controlAck(
    session: string,
    entry: SessionMemory,
    messageId: string,
    control: NonNullable<ReturnType<typeof parseControl>>,
    setting: ReturnType<typeof resolveQueueSetting>,
  ): Ack {
    let text: string;
    let disposition: SessionDecision["disposition"] = "control";
    switch (control.command) {
      case "queue":
        entry.override = { ...(entry.override ?? {}), ...control.settings };
        text = `Queue settings for this session: ${JSON.stringify(entry.override)}.`;
        break;
      case "queue-reset":
        entry.override = null;
        text = "Queue settings for this session are back to the defaults.";
        break;
      case "stop": {
        const actor = entry.actor;
        const run = runView(actor);
        let dropped = 0;
        const counting = actor?.on("message.dropped", () => {
          dropped++;
        });
        actor?.send({ type: "session.stop" });
        counting?.unsubscribe();
        const call = run?.context.pendingCalls[run.context.toolIndex];
        const stuck =
          run?.state.startsWith("toolBatch.toolRunning") &&
          call &&
          !run.context.input.cancellableTools.includes(call.name)
            ? ` ${call.name} cannot be cancelled, so it finishes first.`
            : "";
        text = run
          ? `Stopping the current reply${dropped ? ` and dropping ${dropped} waiting message(s)` : ""}.${stuck}`
          : dropped
            ? `Dropped ${dropped} waiting message(s); nothing was running.`
            : "Nothing was running.";
        break;
      }
      case "new":
        sessionActor(session, entry).send({ type: "session.new" });
        text =
          "Starting a fresh conversation; earlier messages stay in the history but are no longer in context.";
        break;
      case "invalid":
        disposition = "rejected";
        text = control.error;
        break;
    }
    const ack: Ack = {
      session,
      messageId,
      disposition,
      mode: setting.mode,
      modeSource: setting.modeSource,
      text,
      reason: `control: ${control.command}`,
    };
    emit("message.acked", { ...ack, session });
    return ack;
  }

  function isAckVisible(channel: string): boolean {
    const visible = config.delivery.visibleAcks;
    return typeof visible === "boolean" ? visible : visible[channel] === true;
  }

  function inspectSession(key: string): SessionInspection | undefined {
    const entry = sessions.get(key);
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

  return {
    config,
    clock,
    store,
    lanes,
    async start(): Promise<void> {
      await resumeSessions();
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
      emit("gateway.draining", {});
      await lanes.drain();
    },
    resume(): void {
      draining = false;
      lanes.resume();
      for (const [key, entry] of sessions)
        if (entry.actor) sessionActor(key, entry).send({ type: "session.resume" });
    },
    async stop(): Promise<void> {
      draining = true;
      await lanes.drain();
      liveIdle.clear();
      for (const [key, entry] of sessions) {
        entry.subscription?.unsubscribe();
        entry.actor?.stop();
        entry.actor = null;
        writer.keepWindow(key, false);
      }
      await store.close();
    },
  };
}

export type Gateway = ReturnType<typeof createGateway>;
export type { InboundMessage };
