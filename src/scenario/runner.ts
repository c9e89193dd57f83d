import { LoopbackChannel } from "../adapters/channels/loopback-channel.js";
import { JsonlStore } from "../adapters/jsonl/jsonl-store.js";
import { MemoryStore } from "../adapters/memory-store.js";
import { ScriptedModel } from "../adapters/scripted-model.js";
import { SimulatedClock } from "../adapters/simulated-clock.js";
import type { TillerEvent } from "../events.js";
import { createGateway, type Gateway } from "../gateway/create-gateway.js";
import { silentLogger } from "../logger.js";
import type { Channel } from "../ports/channel.js";
import type { Clock } from "../ports/clock.js";
import { sleep } from "../ports/clock.js";
import type { ModelProvider } from "../ports/model.js";
import type { TranscriptStore } from "../ports/store.js";
import type { ToolDefinition } from "../ports/tool.js";
import { activityOf, loopbackSettings } from "./channel-spec.js";
import { checkExpectations } from "./check-expectations.js";
import { scenarioCommitments } from "./commitments.js";
import { collectDeliveries, collectToolCalls, type ScenarioResult } from "./scenario-result.js";
import type { Scenario } from "./schema.js";
import { fenced, ScopedClock } from "./scoped-clock.js";
import { StateRecorder } from "./state-recorder.js";

export type { ScenarioResult } from "./scenario-result.js";

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
    const { options: settings, failSendNumbers } = loopbackSettings(scenario.channels[name]);
    const loopback = new LoopbackChannel({ ...settings, now: () => clock.now(), clock });
    channels.set(name, loopback);
    const faulty = failSendNumbers.length ? failingSends(loopback, failSendNumbers) : loopback;
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
    ...activityOf(channels),
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
