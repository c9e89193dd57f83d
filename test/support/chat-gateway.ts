import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel, type ScriptedRule } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { GatewayConfigInput } from "../../src/config.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import type { InboundMessage } from "../../src/gateway/inbound/validate-inbound.js";
import { silentLogger } from "../../src/logger.js";
import type { Channel, DeliveryReceipt, OutboundMessage } from "../../src/ports/channel.js";
import { type Clock, sleep } from "../../src/ports/clock.js";
import type { ModelProvider } from "../../src/ports/model.js";
import type { TranscriptStore } from "../../src/ports/store.js";
import type { ToolDefinition } from "../../src/ports/tool.js";

export interface ChatGatewayOptions {
  config?: GatewayConfigInput;
  rules?: ScriptedRule[];
  tools?: ToolDefinition[];
  model?: ModelProvider | ((clock: SimulatedClock) => ModelProvider);
  store?: TranscriptStore;
}

/**
 * One gateway "process" in front of a chat channel named `chat` (not `web`, so chat-channel defaults
 * apply), on a simulated clock. A restart is a second call on the same store; the first one's clock is
 * never advanced again, as after kill -9.
 */
export function chatGateway(channel: (clock: SimulatedClock) => Channel, options: ChatGatewayOptions = {}) {
  const clock = new SimulatedClock();
  const store = options.store ?? new MemoryStore({ now: () => clock.now() });
  const events: TillerEvent[] = [];
  const built = channel(clock);
  const gateway = createGateway({
    config: options.config ?? {},
    model:
      (typeof options.model === "function" ? options.model(clock) : options.model) ??
      new ScriptedModel(options.rules ?? [{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
    tools: options.tools ?? [],
    channels: { chat: built },
    clock,
    store,
    logger: silentLogger,
  });
  gateway.subscribe((event) => {
    events.push(event);
  });
  const settle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const send = (id: string, text: string, extra: Partial<InboundMessage> = {}) =>
    gateway.receive({ session: "chat:1", channel: "chat", id, text, ...extra });
  const ofType = (type: string) => events.filter((event) => event.type === type);
  return { gateway, clock, store, channel: built, events, settle, send, ofType };
}

/**
 * A platform without idempotency keys (as Telegram's Bot API is): every call that reaches it posts a
 * message, however many times the same deliveryId comes, and answers after `delayMs` whatever the
 * caller's signal says.
 */
export class SlowPlatform implements Channel {
  readonly posted: OutboundMessage[] = [];
  readonly signals: AbortSignal[] = [];
  constructor(
    private readonly clock: Clock,
    private readonly delayMs: number,
  ) {}
  async send(message: OutboundMessage, options?: { signal: AbortSignal }): Promise<DeliveryReceipt> {
    if (options) this.signals.push(options.signal);
    this.posted.push(message);
    await sleep(this.clock, this.delayMs);
    return { messageId: String(this.posted.length) };
  }
}
