import { LoopbackChannel } from "../adapters/channels/loopback-channel.js";
import { JsonlStore } from "../adapters/jsonl/jsonl-store.js";
import { MemoryStore } from "../adapters/memory-store.js";
import { ScriptedModel } from "../adapters/scripted-model.js";
import { SimulatedClock } from "../adapters/simulated-clock.js";
import type { TillerEvent } from "../events.js";
import { createGateway, type Gateway } from "../gateway/create-gateway.js";
import { silentLogger } from "../logger.js";
import type { Channel } from "../ports/channel.js";
import type { Clock, TimerHandle } from "../ports/clock.js";
import { sleep } from "../ports/clock.js";
import type { ModelProvider } from "../ports/model.js";
import type { TranscriptRecord, TranscriptStore } from "../ports/store.js";
import type { ToolDefinition } from "../ports/tool.js";
import { checkExpectations, type Expectation, type RecordedStates } from "./check-expectations.js";
import { scenarioCommitments } from "./commitments.js";
import type { Scenario } from "./schema.js";
import { StateRecorder } from "./state-recorder.js";

/** The JSON a scenario run prints (docs/scenarios.md). */
export interface ScenarioResult {
  name: string;
  deliveries: Array<{
    at: number;
    session: string;
    channel: string;
    kind: string;
    text: string;
    messageId: string;
    runId: string;
    /** The logical delivery (stable across resends and restarts). */
    deliveryId?: string;
  }>;
  acks: Array<{
    at: number;
    session: string;
    messageId: string;
    disposition: string;
    mode: string;
    modeSource: string;
    text: string;
    /** Present for a turn nobody typed (`cron`, `heartbeat`, ...). */
    trigger?: string;
    reason?: string;
  }>;
  modelCalls: Array<{
    at: number;
    session: string;
    runId: string;
    call: number;
    recheck: boolean;
    recovery: boolean;
    review: boolean;
    latestUser: string;
    userTexts: string[];
    /** What started the call's turn: `user`, or `cron`, `heartbeat`, `subagent`, ... */
    trigger: string;
  }>;
  toolCalls: Array<{
    at: number;
    session: string;
    runId: string;
    name: string;
    args: unknown;
    status: string;
  }>;
  transcripts: Record<string, Array<Partial<TranscriptRecord>>>;
  commitments: Array<{ id: string; status: string; classification: string }>;
  events: TillerEvent[];
  /** State values each session's session actor and run actors passed through, in order. */
  states: RecordedStates;
  /** State values each commitment's actors passed through (one actor per review), by id. */
  commitmentStates: Record<string, string[]>;
  /** Present when the scenario has an `expect` block: each expectation with what was found. */
  expectations?: Expectation[];
}

export interface RunScenarioOptions {
  /** Keep transcripts in a JSONL store at this directory (default: a fresh in-memory store). */
  storeDir?: string;
  /** Wraps or replaces the scenario's scripted model (e.g. your own adapter around it). */
  model?: (scripted: ModelProvider) => ModelProvider;
  /** Wraps or replaces the scenario's scripted tools. */
  tools?: (scripted: ToolDefinition[]) => ToolDefinition[];
  /** Wraps a scenario channel (what it delivers is still read from the loopback channel inside). */
  channel?: (scripted: Channel, name: string) => Channel;
}

/**
 * Plays a scenario against the real gateway and machines on a simulated clock. Restarts kill every
 * in-process timer and promise of the running gateway, then start a new one on the same store.
 *
 * @example
 * ```ts
 * const result = await runScenario(await loadScenario("examples/correction-mid-tool.yaml"));
 * console.log(result.acks.map((ack) => ack.disposition));
 * ```
 */
export async function runScenario(
  scenario: Scenario,
  options: RunScenarioOptions = {},
): Promise<{ result: ScenarioResult; gateway: Gateway }> {
  const clock = new SimulatedClock();
  const events: TillerEvent[] = [];
  const acks: ScenarioResult["acks"] = [];
  const states = new StateRecorder();
  let store: TranscriptStore = await openStore(options.storeDir, clock);
  const channelNames = new Set([
    ...Object.keys(scenario.channels),
    ...scenario.inbound.map((message) => message.channel),
  ]);
  // A pure resume (no inbound, no channels): the stored sessions' channels are loopback channels.
  if (channelNames.size === 0) for (const name of await storedChannels(store)) channelNames.add(name);
  if (channelNames.size === 0) channelNames.add("loopback");
  const channels = new Map<string, LoopbackChannel>();
  const gatewayChannels: Record<string, Channel> = {};
  for (const name of channelNames) {
    const { failSendNumbers, ...settings } = scenario.channels[name] ?? {
      failSends: 0,
      omitMessageId: false,
    };
    const loopback = new LoopbackChannel({ ...settings, now: () => clock.now(), clock });
    channels.set(name, loopback);
    const faulty = failSendNumbers?.length ? failingSends(loopback, failSendNumbers) : loopback;
    gatewayChannels[name] = options.channel ? options.channel(faulty, name) : faulty;
  }
  const newRunId = await runIdsAfter(store);
  const newCommitmentId = await scenarioCommitments(scenario, store);
  let incarnation = new ScopedClock(clock);
  const wrapModel = options.model ?? ((scripted: ModelProvider) => scripted);
  const wrapTools = options.tools ?? ((scripted: ToolDefinition[]) => scripted);
  let gateway = await boot();

  async function boot(): Promise<Gateway> {
    const scoped = incarnation;
    const next = createGateway({
      config: (scenario.config ?? {}) as object,
      model: wrapModel(new ScriptedModel(scenario.model, scoped)),
      tools: wrapTools(scenarioTools(scenario, scoped)),
      channels: gatewayChannels,
      store: fenced(store, scoped),
      clock: scoped,
      logger: silentLogger,
      newRunId,
      newCommitmentId,
      inspect: (event) => {
        if (scoped.isAlive) states.observe(event);
      },
    });
    next.subscribe((event) => {
      if (!scoped.isAlive) return;
      events.push(event);
      // Triggered turns (inbound entries with a trigger, schedules) are acked like messages.
      if (event.type === "message.acked" && typeof event.trigger === "string") {
        acks.push({
          at: event.at,
          session: String(event.session),
          messageId: String(event.messageId),
          disposition: String(event.disposition),
          mode: String(event.mode),
          modeSource: String(event.modeSource),
          text: String(event.text),
          trigger: event.trigger,
          ...(typeof event.reason === "string" ? { reason: event.reason } : {}),
        });
      }
    });
    await next.start();
    return next;
  }

  for (const message of scenario.inbound) {
    clock.setTimeout(() => {
      const target = gateway;
      const alive = incarnation;
      if (message.trigger !== undefined && message.trigger !== "user") {
        const { session, channel, text, id, trigger } = message;
        target.trigger({ session, channel, text, id, trigger }).catch((error: unknown) =>
          acks.push({
            at: clock.now(),
            session,
            messageId: id,
            disposition: "rejected",
            mode: "followup",
            modeSource: "default",
            text: `Not accepted: ${(error as Error).message}`,
            trigger,
          }),
        );
        return;
      }
      target.receive(message).then(
        (ack) =>
          // A process killed before it answered never acknowledged the message.
          alive.isAlive &&
          acks.push({
            at: clock.now(),
            session: ack.session,
            messageId: ack.messageId,
            disposition: ack.disposition,
            mode: ack.mode,
            modeSource: ack.modeSource,
            text: ack.text,
          }),
        (error: unknown) =>
          alive.isAlive &&
          acks.push({
            at: clock.now(),
            session: message.session,
            messageId: message.id,
            disposition: "rejected",
            mode: "steer",
            modeSource: "default",
            text: `Not accepted: ${(error as Error).message}`,
          }),
      );
    }, message.at);
  }
  for (const dismissal of scenario.dismiss) {
    clock.setTimeout(() => {
      gateway.commitments.dismiss(dismissal.id).catch((error: unknown) =>
        events.push({
          at: clock.now(),
          type: "commitment.storeFailed",
          id: dismissal.id,
          error: String(error),
        }),
      );
    }, dismissal.at);
  }
  for (const restart of scenario.restart) {
    clock.setTimeout(() => {
      // kill -9: nothing of the old process runs again; only the store survives.
      incarnation.kill();
      events.push({ at: clock.now(), type: "process.restarted" });
      booting = true;
      pendingRestart = (async () => {
        if (store instanceof JsonlStore) {
          await store.close();
          store = await openStore(options.storeDir, clock);
        }
        incarnation = new ScopedClock(clock);
        gateway = await boot();
        booting = false;
      })();
    }, restart.at);
  }
  let pendingRestart: Promise<void> | null = null;
  // A restart's start-up (reopening the store, resuming sessions) is real I/O: simulated time waits for
  // it, so a message due after the restart reaches the new gateway, as it would in a real process.
  let booting = false;
  const isBusy = () => booting || gateway.isBusy;
  await clock.runUntilIdle({ ...(scenario.until ? { until: scenario.until } : {}), isBusy });
  while (pendingRestart) {
    const waiting: Promise<void> = pendingRestart;
    pendingRestart = null;
    await waiting;
    await clock.runUntilIdle({ ...(scenario.until ? { until: scenario.until } : {}), isBusy });
  }

  const transcripts: ScenarioResult["transcripts"] = {};
  for (const session of (await store.sessions()).sort()) transcripts[session] = await store.read(session);
  const result: ScenarioResult = {
    name: scenario.name,
    deliveries: collectDeliveries(channels),
    acks,
    modelCalls: events
      .filter((event) => event.type === "model.called")
      .map((event) => ({
        at: event.at,
        session: String(event.session),
        runId: String(event.runId),
        call: Number(event.call),
        recheck: Boolean(event.recheck),
        recovery: Boolean(event.recovery),
        review: Boolean(event.review),
        latestUser: String(event.latestUser ?? ""),
        userTexts: (event.userTexts as string[]) ?? [],
        trigger: String(event.trigger ?? "user"),
      })),
    toolCalls: collectToolCalls(events),
    transcripts,
    commitments: gateway.commitments.list().map((commitment) => ({
      id: commitment.id,
      status: commitment.status,
      classification: commitment.classification ?? "",
    })),
    events,
    states: states.result(),
    commitmentStates: states.commitmentResult(),
  };
  if (scenario.expect) result.expectations = checkExpectations(scenario.expect, result);
  await gateway.stop();
  return { result, gateway };
}

/** The channel, except that the sends with these numbers (1-based, every send counted) fail. */
function failingSends(inner: Channel, numbers: readonly number[]): Channel {
  const failing = new Set(numbers);
  let count = 0;
  return {
    send(message) {
      count += 1;
      if (failing.has(count)) return Promise.reject(new Error(`send ${count} failed (injected fault)`));
      return inner.send(message);
    },
  };
}

/** The channels the stored sessions' messages came in on. */
async function storedChannels(store: TranscriptStore): Promise<string[]> {
  const names = new Set<string>();
  for (const session of await store.sessions())
    for (const record of await store.readWindow(session))
      if (record.role === "user" && record.channel) names.add(record.channel);
  return [...names].sort();
}

async function openStore(dir: string | undefined, clock: Clock): Promise<TranscriptStore> {
  if (!dir) return new MemoryStore({ now: () => clock.now() });
  return JsonlStore.openDir({ dir, now: () => clock.now() });
}

function scenarioTools(scenario: Scenario, clock: Clock): ToolDefinition[] {
  return Object.entries(scenario.tools).map(([name, spec]) => ({
    name,
    cancellable: spec.cancellable,
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    ...(spec.parameters !== undefined ? { parameters: spec.parameters } : {}),
    ...(spec.readOnly !== undefined ? { readOnly: spec.readOnly } : {}),
    ...(spec.requires !== undefined ? { requires: spec.requires } : {}),
    async execute(_args, context) {
      await sleep(clock, spec.durationMs, spec.cancellable ? context.signal : undefined);
      if (spec.error) throw new Error(spec.error);
      if (spec.subagent) {
        if (!context.runSubagent) throw new Error("this gateway runs no subagents");
        return context.runSubagent(spec.subagent);
      }
      return spec.result ?? "ok";
    },
  }));
}

function collectDeliveries(channels: Map<string, LoopbackChannel>): ScenarioResult["deliveries"] {
  const all: Array<ScenarioResult["deliveries"][number] & { order: number }> = [];
  let order = 0;
  for (const [channel, loopback] of channels) {
    for (const sent of loopback.sent) {
      if (!sent.ok) continue;
      all.push({
        at: sent.at,
        session: sent.session,
        channel,
        kind: sent.kind,
        text: sent.text,
        messageId: sent.messageId ?? "",
        runId: sent.runId ?? "",
        ...(sent.deliveryId ? { deliveryId: sent.deliveryId } : {}),
        order: order++,
      });
    }
  }
  return all
    .sort((a, b) => a.at - b.at || a.order - b.order)
    .map(({ order: _order, ...delivery }) => delivery);
}

function collectToolCalls(events: TillerEvent[]): ScenarioResult["toolCalls"] {
  const startedAt = new Map<string, number>();
  const calls: ScenarioResult["toolCalls"] = [];
  // A refused call never ran: its result is a failure the model reads, its status says why.
  const refused = new Set(events.filter((e) => e.type === "tool.refused").map((e) => String(e.callId)));
  for (const event of events) {
    if (event.type === "tool.started") startedAt.set(String(event.callId), event.at);
    if (event.type === "tool.ended" || event.type === "tool.skipped") {
      calls.push({
        at: startedAt.get(String(event.callId)) ?? event.at,
        session: String(event.session),
        runId: String(event.runId),
        name: String(event.name),
        args: event.args ?? {},
        status:
          event.type === "tool.skipped"
            ? "skipped"
            : refused.has(String(event.callId))
              ? "refused"
              : String(event.status),
      });
    }
  }
  return calls;
}

/**
 * The store as one process sees it: once the process is killed, nothing it still had in flight reaches
 * the store (a call after the kill never settles), as after kill -9.
 */
function fenced(store: TranscriptStore, scope: ScopedClock): TranscriptStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function" || key === "close") return value;
      return (...args: unknown[]) => {
        if (!scope.isAlive) return new Promise(() => {});
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Promise
          ? result.then((settled) => (scope.isAlive ? settled : new Promise(() => {})))
          : result;
      };
    },
  });
}

/**
 * One process's view of the shared simulated clock. Killing it drops every timer it set, as a
 * process death would; the next process gets a fresh scope on the same timeline.
 */
class ScopedClock implements Clock {
  private alive = true;
  private readonly timers = new Set<TimerHandle>();

  constructor(private readonly inner: SimulatedClock) {}

  get isAlive(): boolean {
    return this.alive;
  }

  now(): number {
    return this.inner.now();
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    if (!this.alive) return { __timer: null };
    const handle = this.inner.setTimeout(() => {
      this.timers.delete(handle);
      if (this.alive) callback();
    }, ms);
    this.timers.add(handle);
    return handle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle);
    this.inner.clearTimeout(handle);
  }

  kill(): void {
    this.alive = false;
    for (const handle of this.timers) this.inner.clearTimeout(handle);
    this.timers.clear();
  }
}

/**
 * Readable, deterministic run ids (`session#1`, `session#2`, ...) that continue after the highest one
 * the store already holds, so a resumed store never sees an id twice.
 */
async function runIdsAfter(store: TranscriptStore): Promise<(session: string) => string> {
  const counters = new Map<string, number>();
  for (const session of await store.sessions()) {
    let highest = 0;
    for (const record of await store.read(session)) {
      const runId = "runId" in record ? record.runId : undefined;
      if (typeof runId === "string" && runId.startsWith(`${session}#`)) {
        const n = Number(runId.slice(session.length + 1));
        if (Number.isInteger(n) && n > highest) highest = n;
      }
    }
    counters.set(session, highest);
  }
  return (session) => {
    const next = (counters.get(session) ?? 0) + 1;
    counters.set(session, next);
    return `${session}#${next}`;
  };
}
