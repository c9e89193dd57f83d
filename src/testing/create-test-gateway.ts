import { LoopbackChannel, type LoopbackDelivery } from "../adapters/channels/loopback-channel.js";
import { MemoryStore } from "../adapters/memory-store.js";
import { ScriptedModel, type ScriptedRule } from "../adapters/scripted-model.js";
import { SimulatedClock } from "../adapters/simulated-clock.js";
import { type GatewayConfigInput, parseConfig } from "../config.js";
import type { TillerEvent } from "../events.js";
import { createGateway, type Gateway, type InboundMessage } from "../gateway/create-gateway.js";
import { silentLogger } from "../logger.js";
import type { ModelProvider } from "../ports/model.js";
import type { ToolDefinition } from "../ports/tool.js";
import type { startFakeOpenAI } from "./fake-openai.js";
import { InvariantMonitor, type InvariantViolation } from "./invariant-monitor.js";

/** Options of {@link createTestGateway}: the config, the model, the tools and the channels of the gateway under test. */
export interface TestGatewayOptions {
  config?: GatewayConfigInput;
  /**
   * Scripted rules (the scenario format's `model`), or a function of the test's clock that returns any
   * provider: your own adapter, or `createOpenAIModel` pointed at {@link startFakeOpenAI}'s server.
   * @default one rule: reply `Re: {{latestUser}}`
   */
  model?: readonly ScriptedRule[] | ((clock: SimulatedClock) => ModelProvider);
  /** Your tools (their own `execute` runs), or a function of the test's clock that returns them. @default [] */
  tools?: ToolDefinition[] | ((clock: SimulatedClock) => ToolDefinition[]);
  /** Channel names; each is a loopback channel that records what it was sent (default `["test"]`). */
  channels?: string[];
  /**
   * Your own invariants, checked on every event next to the runtime's: return why the event breaks
   * one (a text, or the ids of the message or run involved too), or nothing when it holds.
   */
  invariants?: Array<(event: TillerEvent) => CustomViolation | string | undefined>;
}

export interface CustomViolation {
  message: string;
  messageId?: string;
  runId?: string;
}

/** What {@link createTestGateway} resolves to: the gateway on a simulated clock, with its invariant monitor. */
export interface TestGateway {
  gateway: Gateway;
  clock: SimulatedClock;
  channels: Record<string, LoopbackChannel>;
  /** Every event so far, in order. */
  events: TillerEvent[];
  /** What reached users, in order, across channels. */
  readonly deliveries: LoopbackDelivery[];
  /** `receive()` with defaults: the first channel, an id `m1`, `m2`, ... */
  receive(
    message: Partial<InboundMessage> & { session: string; text: string },
  ): ReturnType<Gateway["receive"]>;
  /** Runs the simulated clock until nothing is pending (or `until`), then checks the invariants. */
  settle(until?: number): Promise<void>;
  /** Advances the simulated clock by `ms`, then checks the invariants. */
  advance(ms: number): Promise<void>;
  /** Broken invariants so far. */
  readonly violations: readonly InvariantViolation[];
  /** Throws an `InvariantError` with a readable story when an invariant broke. */
  assertInvariants(): void;
  stop(): Promise<void>;
}

/** A broken invariant of the runtime, with the story of the message involved. */
export class InvariantError extends Error {
  constructor(
    readonly violations: readonly InvariantViolation[],
    story: string,
  ) {
    super(story);
    this.name = "InvariantError";
  }
}

/**
 * Resolves (it returns a Promise: `await` it) to a gateway for tests: simulated clock, scripted model, loopback channels and a memory store, with the
 * runtime's invariants checked on every event. `settle()` and `advance()` fail with a readable story
 * (the invariant, and what happened to the message involved) as soon as one breaks.
 *
 * @example
 * ```ts
 * import { createTestGateway } from "tiller-gateway/testing";
 * const t = await createTestGateway({ model: [{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }] });
 * await t.receive({ session: "test:1", text: "hello" });
 * await t.settle();
 * t.deliveries.map((delivery) => delivery.text); // ["Re: hello"]
 * ```
 */
export async function createTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const clock = new SimulatedClock();
  const config = parseConfig(options.config ?? {});
  const names = options.channels ?? ["test"];
  const channels = Object.fromEntries(
    names.map((name) => [name, new LoopbackChannel({ now: () => clock.now() })]),
  );
  const model =
    typeof options.model === "function"
      ? options.model(clock)
      : new ScriptedModel(options.model ?? [{ reply: { text: "Re: {{latestUser}}" } }], clock);
  const turns = new Map<string, number>();
  const tools = typeof options.tools === "function" ? options.tools(clock) : (options.tools ?? []);
  const gateway = createGateway({
    config,
    model,
    tools,
    channels,
    store: new MemoryStore({ now: () => clock.now() }),
    clock,
    logger: silentLogger,
    // Readable run ids (`test:1#1`, `test:1#2`, ...) so failures and snapshots are stable.
    newRunId: (session) => {
      const next = (turns.get(session) ?? 0) + 1;
      turns.set(session, next);
      return `${session}#${next}`;
    },
  });
  const events: TillerEvent[] = [];
  const monitor = new InvariantMonitor(config.staleReplyRecheck.maxPasses, {
    requires: (name) => tools.find((tool) => tool.name === name)?.requires,
  });
  gateway.subscribe((event) => {
    events.push(event);
    monitor.observe(event);
    for (const check of options.invariants ?? []) {
      const found = check(event);
      if (found === undefined) continue;
      const detail = typeof found === "string" ? { message: found } : found;
      monitor.violations.push({
        invariant: "custom",
        at: event.at,
        ...(typeof event.session === "string" ? { session: event.session } : {}),
        ...detail,
      });
    }
  });
  await gateway.start();
  let counter = 0;

  const assertInvariants = () => {
    if (monitor.violations.length === 0) return;
    throw new InvariantError(monitor.violations, storyOf(monitor.violations, gateway, events));
  };
  // A provider that talks to a server (createOpenAIModel) is busy while a call is on the wire: the
  // simulated clock must not run ahead of it.
  const modelBusy = () => (model as { isBusy?: boolean }).isBusy === true;
  const isBusy = () => gateway.isBusy || modelBusy();

  return {
    gateway,
    clock,
    channels,
    events,
    get deliveries() {
      return Object.values(channels)
        .flatMap((channel) => channel.sent.filter((sent) => sent.ok))
        .sort((a, b) => a.at - b.at);
    },
    receive(message) {
      counter++;
      return gateway.receive({ channel: names[0]!, id: `m${counter}`, ...message } as InboundMessage);
    },
    async settle(until) {
      await clock.runUntilIdle({ isBusy, ...(until === undefined ? {} : { until }) });
      if (until === undefined) monitor.checkSettled(clock.now());
      assertInvariants();
    },
    async advance(ms) {
      await clock.advance(ms, isBusy);
      assertInvariants();
    },
    get violations() {
      return monitor.violations;
    },
    assertInvariants,
    async stop() {
      await gateway.stop();
    },
  };
}

/** The first violations, each with `explain()` of its message and the events of its run. */
function storyOf(
  violations: readonly InvariantViolation[],
  gateway: Gateway,
  events: readonly TillerEvent[],
): string {
  const lines: string[] = [];
  for (const violation of violations.slice(0, 3)) {
    lines.push(`invariant ${violation.invariant} broken at ${violation.at} ms: ${violation.message}`);
    if (violation.session && violation.messageId) {
      const story = gateway.explain(violation.session, violation.messageId);
      if (story) for (const step of story.timeline) lines.push(`  ${step.at} ms  ${step.what}`);
    }
    if (violation.runId) {
      for (const event of events.filter((candidate) => candidate.runId === violation.runId).slice(0, 30)) {
        lines.push(`  ${event.at} ms  ${event.type}`);
      }
    }
  }
  if (violations.length > 3) lines.push(`(${violations.length - 3} more)`);
  return lines.join("\n");
}
