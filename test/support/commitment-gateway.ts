import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent, TillerEventType } from "../../src/events.js";
import { createGateway, type GatewayOptions } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { Channel, OutboundMessage } from "../../src/ports/channel.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";
import type { TranscriptStore } from "../../src/ports/store.js";
import type { ToolDefinition } from "../../src/ports/tool.js";

export const HOUR = 3_600_000;

/** A proposal every check accepts: an open loop on which slot to book. */
export const PROPOSAL = {
  kind: "open_loop",
  reason: "Asked which slot to book.",
  suggestedText: "Which slot should I book?",
  dedupeKey: "booking:slot",
  confidence: 0.9,
};

/** A model that answers turns with `turn` and reviews with `review`, recording every request. */
export function recordingModel(
  review: (request: ModelRequest) => ModelReply | Promise<ModelReply>,
  turn: (request: ModelRequest) => ModelReply = () => ({ text: "Thursday or Friday?", toolCalls: [] }),
) {
  const requests: ModelRequest[] = [];
  const model: ModelProvider = {
    async complete(request) {
      requests.push({ ...request, context: [...request.context] });
      return request.review ? review(request) : turn(request);
    },
  };
  return { model, requests, reviews: () => requests.filter((request) => request.review) };
}

export const decision = (classification: string, text?: string): ModelReply => ({
  text: "",
  toolCalls: [
    { callId: "d1", name: "commitment_decision", args: { classification, ...(text ? { text } : {}) } },
  ],
});

/** A gateway with commitments on, an hourly heartbeat, and a loopback `web` channel. */
export function commitmentGateway<C extends Channel = LoopbackChannel>(options: {
  model: ModelProvider;
  clock?: SimulatedClock;
  store?: TranscriptStore;
  channel?: C;
  tools?: ToolDefinition[];
  config?: Record<string, unknown>;
  extra?: Partial<GatewayOptions>;
}) {
  const clock = options.clock ?? new SimulatedClock();
  const store = options.store ?? new MemoryStore({ now: () => clock.now() });
  const channel = (options.channel ?? new LoopbackChannel({ now: () => clock.now() })) as C;
  const gateway = createGateway({
    model: options.model,
    channels: { web: channel },
    clock,
    store,
    logger: silentLogger,
    tools: options.tools ?? [],
    config: { commitments: { enabled: true, maxPerDay: 3 }, heartbeat: { everyMs: HOUR }, ...options.config },
    ...options.extra,
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = (until?: number) =>
    clock.runUntilIdle({ isBusy: () => gateway.isBusy, ...(until !== undefined ? { until } : {}) });
  const say = (id: string, text: string) => gateway.receive({ session: "web:1", channel: "web", id, text });
  const ofType = <K extends TillerEventType>(type: K) =>
    events.filter((event): event is Extract<TillerEvent, { type: K }> => event.type === type);
  return { clock, store, channel, gateway, events, idle, say, ofType };
}

/** A channel that never answers a commitment send (a process about to die mid-send). */
export class StallingChannel implements Channel {
  readonly sent: OutboundMessage[] = [];
  async send(message: OutboundMessage) {
    this.sent.push(message);
    if (message.kind === "commitment") return new Promise<never>(() => {});
    return { messageId: `out-${this.sent.length}` };
  }
}
