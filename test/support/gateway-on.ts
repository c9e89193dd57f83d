import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import type { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel, type ScriptedRule } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { GatewayConfigInput } from "../../src/config.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import type { LaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { silentLogger } from "../../src/logger.js";
import type { Channel } from "../../src/ports/channel.js";
import { sleep } from "../../src/ports/clock.js";
import type { ModelProvider } from "../../src/ports/model.js";
import type { TranscriptStore } from "../../src/ports/store.js";
import type { ToolDefinition } from "../../src/ports/tool.js";

export interface GatewayOnOptions {
  config?: GatewayConfigInput;
  rules?: ScriptedRule[];
  tools?: ToolDefinition[];
  channel?: Channel;
  model?: ModelProvider;
  /** The lane scheduler, built on the gateway's clock (default: the in-process one). */
  lanes?: (clock: SimulatedClock) => LaneScheduler;
}

/**
 * One gateway "process" on a shared store, with its own simulated clock: a restart is a second call on
 * the same store (the first one's clock is simply never advanced again, as after kill -9).
 */
export function gatewayOn(store: TranscriptStore | MemoryStore, options: GatewayOnOptions = {}) {
  const clock = new SimulatedClock();
  const loopback = new LoopbackChannel({ now: () => clock.now() });
  const events: TillerEvent[] = [];
  const gateway = createGateway({
    config: options.config ?? {},
    model:
      options.model ??
      new ScriptedModel(options.rules ?? [{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
    tools: options.tools ?? [],
    channels: { web: options.channel ?? loopback },
    clock,
    store,
    ...(options.lanes ? { lanes: options.lanes(clock) } : {}),
    logger: silentLogger,
  });
  gateway.subscribe((event) => {
    events.push(event);
  });
  const settle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const send = (id: string, text: string, mode?: string) =>
    gateway.receive({ session: "web:1", channel: "web", id, text, ...(mode ? { mode } : {}) });
  return { gateway, clock, channel: loopback, events, settle, send };
}

/** A tool on the gateway's clock; `cancellable: false` ignores the turn's signal, as a real one may. */
export function clockTool(
  name: string,
  durationMs: number,
  cancellable: boolean,
  clock: () => SimulatedClock,
  ran: string[] = [],
): ToolDefinition {
  return {
    name,
    cancellable,
    async execute(_args, context) {
      ran.push(context.callId);
      await sleep(clock(), durationMs, cancellable ? context.signal : undefined);
      return "done";
    },
  };
}

/** A channel whose sends never answer (the process dies while the text is on its way). */
export class HangingChannel implements Channel {
  readonly sent: Array<{ deliveryId: string; text: string }> = [];
  /** When set, the send reaches this channel (the user has it) before the receipt is lost. */
  constructor(private readonly through?: Channel) {}
  async send(message: Parameters<Channel["send"]>[0]) {
    this.sent.push({ deliveryId: message.deliveryId ?? "", text: message.text });
    if (this.through) await this.through.send(message);
    return new Promise<never>(() => {});
  }
}
