import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { TillerEvent } from "../../events.js";
import type { LaneSnapshot } from "../../lanes/lane-scheduler.types.js";
import { type Channel, isCommitted, withSend } from "../../ports/channel.js";

/** Chat turns: a quick answer in a fraction of a second, a tool-using turn in minutes. */
const TURN_BUCKETS = [0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300, 600];
/** One model call: time to a whole reply, from a small local model to a long reasoning call. */
const MODEL_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];
/** Lane waits: none when there is room, seconds to minutes behind a busy session or a full lane. */
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** What the metrics read from the gateway. */
export interface MetricsSource {
  subscribe(listener: (event: TillerEvent) => void): () => void;
  lanes: { snapshot(): LaneSnapshot };
}

/**
 * Prometheus metrics of a gateway (prom-client, its own registry): counters and histograms fed by the
 * event stream, lane gauges read from the scheduler at scrape time, sends counted by a channel wrapper,
 * and the default process metrics. `tiller serve` serves them on `GET /metrics`.
 *
 * @example
 * ```ts
 * const metrics = createGatewayMetrics();
 * const gateway = createGateway({ model, channels: { web: metrics.channel(web) } });
 * metrics.observe(gateway);
 * const text = await metrics.registry.metrics();
 * ```
 */
export function createGatewayMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  let source: MetricsSource | undefined;

  const messages = new Counter({
    name: "tiller_messages_total",
    help: "Inbound messages by what their acknowledgement said happened to them.",
    labelNames: ["disposition"],
    registers,
  });
  const turns = new Counter({
    name: "tiller_turns_total",
    help: "Turns ended, by status and by what started them.",
    labelNames: ["status", "trigger"],
    registers,
  });
  const turnDuration = new Histogram({
    name: "tiller_turn_duration_seconds",
    help: "Turn duration, from its lane slot to its end.",
    buckets: TURN_BUCKETS,
    registers,
  });
  const laneWait = new Histogram({
    name: "tiller_lane_wait_seconds",
    help: "Time a task waited for its session and a slot of its workload lane.",
    labelNames: ["lane"],
    buckets: WAIT_BUCKETS,
    registers,
  });
  const laneGauge = (name: string, help: string, field: "active" | "queued") =>
    new Gauge({
      name,
      help,
      labelNames: ["lane"],
      registers,
      collect() {
        this.reset();
        const lanes = source?.lanes.snapshot().lanes ?? {};
        for (const [lane, figures] of Object.entries(lanes)) {
          if (!lane.startsWith("session:")) this.set({ lane }, figures[field]);
        }
      },
    });
  laneGauge("tiller_lane_active", "Tasks running in each workload lane.", "active");
  laneGauge("tiller_lane_queued", "Tasks waiting for a slot of each workload lane.", "queued");
  const modelCalls = new Counter({
    name: "tiller_model_calls_total",
    help: "Model calls ended, by status (done, failed, aborted).",
    labelNames: ["status"],
    registers,
  });
  const modelDuration = new Histogram({
    name: "tiller_model_call_duration_seconds",
    help: "Model call duration, to the end of the reply.",
    buckets: MODEL_BUCKETS,
    registers,
  });
  const toolCalls = new Counter({
    name: "tiller_tool_calls_total",
    help: "Tool calls ended, by tool and status as stored in the transcript.",
    labelNames: ["tool", "status"],
    registers,
  });
  const rechecks = new Counter({
    name: "tiller_recheck_total",
    help: "Stale-reply re-checks: fired (reason: the signal) or skipped (reason: limit or disabled).",
    labelNames: ["outcome", "reason"],
    registers,
  });
  const deliveries = new Counter({
    name: "tiller_deliveries_total",
    help: "Channel sends by kind and outcome (delivered: a committed receipt).",
    labelNames: ["kind", "outcome"],
    registers,
  });
  const tokens = new Counter({
    name: "tiller_gen_ai_tokens_total",
    help: "Model tokens used, by type (input, output), where the provider reports them.",
    labelNames: ["type"],
    registers,
  });

  const turnStarts = new Map<string, { at: number; trigger: string }>();

  function observeEvent(event: TillerEvent): void {
    switch (event.type) {
      case "message.acked":
        messages.inc({ disposition: event.disposition });
        return;
      case "turn.started":
        turnStarts.set(event.runId, { at: event.at, trigger: event.trigger ?? "user" });
        return;
      case "turn.ended": {
        const start = turnStarts.get(event.runId);
        turnStarts.delete(event.runId);
        turns.inc({ status: event.status, trigger: start?.trigger ?? "user" });
        if (start) turnDuration.observe((event.at - start.at) / 1000);
        return;
      }
      case "lane.started":
        laneWait.observe({ lane: event.lane }, event.waitedMs / 1000);
        return;
      case "model.ended":
        modelCalls.inc({ status: event.status });
        modelDuration.observe(event.durationMs / 1000);
        if (event.usage) {
          tokens.inc({ type: "input" }, event.usage.inputTokens);
          tokens.inc({ type: "output" }, event.usage.outputTokens);
        }
        return;
      case "tool.ended":
        toolCalls.inc({ tool: event.name, status: event.status });
        return;
      case "recheck.fired":
        rechecks.inc({ outcome: "fired", reason: event.reason });
        return;
      case "recheck.skipped":
        rechecks.inc({ outcome: "skipped", reason: event.reason });
        return;
      default:
        return;
    }
  }

  return {
    registry,
    /** Starts counting what `gateway` does; returns the unsubscribe. */
    observe(gateway: MetricsSource): () => void {
      source = gateway;
      return gateway.subscribe(observeEvent);
    },
    /** The channel, with each send counted in `tiller_deliveries_total`. */
    channel<C extends Channel>(inner: C): Channel {
      return withSend(inner, async (message, options) => {
        try {
          const receipt = await inner.send(message, options);
          deliveries.inc({ kind: message.kind, outcome: isCommitted(receipt) ? "delivered" : "failed" });
          return receipt;
        } catch (error) {
          deliveries.inc({ kind: message.kind, outcome: "failed" });
          throw error;
        }
      });
    },
    /** Each of `channels`, wrapped as {@link channel} does. */
    channels(inner: Record<string, Channel>): Record<string, Channel> {
      return Object.fromEntries(
        Object.entries(inner).map(([name, channel]) => [name, this.channel(channel)]),
      );
    },
  };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
