/**
 * OpenTelemetry spans of every turn, derived from the gateway's own event stream: the machines stay
 * free of I/O, and an event is emitted exactly where the work it reports starts or ends.
 *
 * One `invoke_agent` span per turn (a trace root, linked to the context that called `receive()`), a
 * `chat <model>` child per model call, an `execute_tool <name>` child per tool call, and a
 * `tiller.deliver` child per channel send (the channel wrapper of {@link TurnTracer.channel}). Attribute
 * names follow the OpenTelemetry GenAI semantic conventions where they define one.
 *
 * Only `@opentelemetry/api`: spans go wherever the application registered an SDK. With none registered
 * every event returns after one comparison, before anything is built.
 */

import {
  type Attributes,
  type Context,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import type { TillerEvent, TillerEventOf } from "../../events.js";
import { type Channel, withSend } from "../../ports/channel.js";
import { forgetRunSpan, isTracingOn, rememberRunSpan } from "../../trace-fields.js";

/** Options of the gateway's tracing (`GatewayOptions.telemetry`). */
export interface TelemetryOptions {
  /**
   * Where spans go.
   * @default the global tracer provider (`trace.getTracerProvider()`): whatever SDK the application registered
   */
  tracerProvider?: TracerProvider;
  /**
   * The model name `chat <model>` spans carry (`gen_ai.request.model`).
   * @default "model"
   */
  model?: string;
}

/** The events spans are made from. */
const TRACED: ReadonlySet<string> = new Set([
  "lane.started",
  "message.acked",
  "turn.started",
  "turn.ended",
  "steer.injected",
  "recheck.fired",
  "recheck.skipped",
  "model.called",
  "model.ended",
  "tool.started",
  "tool.ended",
]);
/** Caller contexts kept for turns not started yet; beyond this the oldest is forgotten. */
const MAX_PENDING_LINKS = 10_000;
/** Ended turns whose late sends still find their parent. */
const MAX_ENDED_TURNS = 1_000;

interface TurnSpan {
  span: Span;
  ctx: Context;
  passes: number;
}

export interface TurnTracer {
  /** Sees every gateway event (the lanes' too), synchronously as it is emitted. */
  observe(event: TillerEvent): void;
  /** Whether spans are made now (an SDK or a provider is there): else events may go unbuilt. */
  isOn(): boolean;
  /** The channel, with a `tiller.deliver` span around each send while tracing is on. */
  channel(channel: Channel): Channel;
}

/** The gateway's tracing: spans from events; a no-op until an SDK is registered. */
export function createTurnTracer(options: TelemetryOptions = {}): TurnTracer {
  const provider = options.tracerProvider;
  const model = options.model ?? "model";
  let tracer: Tracer | undefined;
  const turns = new Map<string, TurnSpan>();
  const ended = new Map<string, TurnSpan>();
  const children = new Map<string, Span>();
  const laneStarts = new Map<string, { lane: string; waitedMs: number }>();
  // Acked messages not in a turn yet: the context of their receive() call (null: it had none).
  const callers = new Map<string, SpanContext | null>();

  /** True once spans can go somewhere; cheap enough for every event. */
  function isOn(): boolean {
    return provider !== undefined || isTracingOn();
  }
  function getTracer(): Tracer {
    tracer ??= (provider ?? trace.getTracerProvider()).getTracer("tiller");
    return tracer;
  }

  function turnStarted(event: TillerEventOf<"turn.started">): void {
    const lane = laneStarts.get(event.session);
    laneStarts.delete(event.session);
    const links: Link[] = [];
    const seen = new Set<string>();
    const link = (spanContext: SpanContext | undefined) => {
      if (!spanContext || seen.has(spanContext.spanId)) return;
      seen.add(spanContext.spanId);
      links.push({ context: spanContext });
    };
    let withinReceive = false;
    for (const id of event.messageIds) {
      const key = `${event.session}\n${id}`;
      const caller = callers.get(key);
      if (caller === undefined) withinReceive = true;
      else if (caller) link(caller);
      callers.delete(key);
    }
    // A turn that starts within receive() (a free session) starts before its ack: the active context is
    // that call's. A queued turn starts from whatever freed the session, whose context is not its own.
    if (withinReceive) link(trace.getSpanContext(context.active()));
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": event.session,
      "tiller.session": event.session,
      "tiller.run_id": event.runId,
      "tiller.trigger": event.trigger ?? "user",
      "tiller.turn.kind": event.kind,
      "tiller.message_ids": event.messageIds,
    };
    if (lane) {
      attributes["tiller.lane"] = lane.lane;
      attributes["tiller.lane.wait_ms"] = lane.waitedMs;
    }
    const span = getTracer().startSpan(
      "invoke_agent",
      { kind: SpanKind.INTERNAL, root: true, links, attributes },
      ROOT_CONTEXT,
    );
    if (!span.isRecording()) return;
    const turn = { span, ctx: trace.setSpan(ROOT_CONTEXT, span), passes: 0 };
    turns.set(event.runId, turn);
    rememberRunSpan(event.runId, span.spanContext());
  }

  function turnEnded(event: TillerEventOf<"turn.ended">): void {
    const turn = turns.get(event.runId);
    if (!turn) return;
    turns.delete(event.runId);
    forgetRunSpan(event.runId);
    // Children cut off with their turn (an abort) end with it.
    const prefix = `${event.runId}\n`;
    for (const [key, child] of children) {
      if (!key.startsWith(prefix)) continue;
      child.setStatus({ code: SpanStatusCode.ERROR, message: "cut off with its turn" });
      child.end();
      children.delete(key);
    }
    const { span } = turn;
    span.setAttribute("tiller.turn.status", event.status);
    span.setAttribute("tiller.recheck.passes", turn.passes);
    if (event.status === "failed") {
      span.setAttribute("error.type", event.error?.code ?? "failed");
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.error?.message ?? "failed" });
    } else if (event.reason) span.setAttribute("tiller.turn.abort_reason", event.reason);
    span.end();
    ended.set(event.runId, turn);
    if (ended.size > MAX_ENDED_TURNS) ended.delete(ended.keys().next().value as string);
  }

  function child(runId: string, key: string, name: string, kind: SpanKind, attributes: Attributes): void {
    const turn = turns.get(runId);
    if (!turn) return;
    children.set(`${runId}\n${key}`, getTracer().startSpan(name, { kind, attributes }, turn.ctx));
  }

  function takeChild(runId: string, key: string): Span | undefined {
    const span = children.get(`${runId}\n${key}`);
    children.delete(`${runId}\n${key}`);
    return span;
  }

  function modelEnded(event: TillerEventOf<"model.ended">): void {
    const span = takeChild(event.runId, `model ${event.call}`);
    if (!span) return;
    if (event.usage) {
      span.setAttribute("gen_ai.usage.input_tokens", event.usage.inputTokens);
      span.setAttribute("gen_ai.usage.output_tokens", event.usage.outputTokens);
    }
    if (event.finishReason) span.setAttribute("gen_ai.response.finish_reasons", [event.finishReason]);
    if (event.toolCalls !== undefined) span.setAttribute("tiller.model.tool_calls", event.toolCalls);
    span.setAttribute("tiller.model.status", event.status);
    if (event.status === "failed") {
      span.setAttribute("error.type", event.error?.code ?? "failed");
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.error?.message ?? "failed" });
    }
    span.end();
  }

  function toolEnded(event: TillerEventOf<"tool.ended">): void {
    const span = takeChild(event.runId, `tool ${event.callId}`);
    if (!span) return;
    span.setAttribute("tiller.tool.status", event.status);
    if (event.status === "failed") {
      span.setAttribute("error.type", "tool_failed");
      span.setStatus({ code: SpanStatusCode.ERROR, message: "the tool failed" });
    }
    span.end();
  }

  function observe(event: TillerEvent): void {
    // Most events (deltas, lane bookkeeping, commitments) make no span: they leave before the provider
    // is even looked at.
    if (!TRACED.has(event.type) || !isOn()) return;
    switch (event.type) {
      case "lane.started":
        if (event.session) laneStarts.set(event.session, { lane: event.lane, waitedMs: event.waitedMs });
        return;
      case "message.acked": {
        // Emitted inside receive(): the active context is its caller's (an HTTP request's span).
        const key = `${event.session}\n${event.messageId}`;
        // The turn it started within that call has taken its link already.
        if (
          event.disposition === "started" ||
          event.disposition === "rejected" ||
          event.disposition === "duplicate"
        )
          return;
        callers.set(key, trace.getSpanContext(context.active()) ?? null);
        if (callers.size > MAX_PENDING_LINKS) callers.delete(callers.keys().next().value as string);
        return;
      }
      case "turn.started":
        turnStarted(event);
        return;
      case "turn.ended":
        turnEnded(event);
        return;
      case "steer.injected":
        turns.get(event.runId)?.span.addEvent("tiller.steer", { "tiller.message_ids": event.messageIds });
        return;
      case "recheck.fired": {
        const turn = turns.get(event.runId);
        if (!turn) return;
        turn.passes = event.pass;
        turn.span.addEvent("tiller.recheck", {
          "tiller.recheck.reason": event.reason,
          "tiller.recheck.outcome": "fired",
          "tiller.recheck.pass": event.pass,
        });
        return;
      }
      case "recheck.skipped":
        turns.get(event.runId)?.span.addEvent("tiller.recheck", {
          "tiller.recheck.reason": event.reason,
          "tiller.recheck.outcome": "skipped",
          "tiller.recheck.signal": event.signal,
        });
        return;
      case "model.called":
        child(event.runId, `model ${event.call}`, `chat ${model}`, SpanKind.CLIENT, {
          "gen_ai.operation.name": "chat",
          "gen_ai.request.model": model,
          "tiller.recheck": event.recheck,
          "tiller.model.call": event.call,
        });
        return;
      case "model.ended":
        modelEnded(event);
        return;
      case "tool.started":
        child(event.runId, `tool ${event.callId}`, `execute_tool ${event.name}`, SpanKind.INTERNAL, {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": event.name,
          "gen_ai.tool.call.id": event.callId,
        });
        return;
      case "tool.ended":
        toolEnded(event);
        return;
      default:
        return;
    }
  }

  function channel(inner: Channel): Channel {
    return withSend(inner, (message, options) => {
      {
        if (!isOn()) return inner.send(message, options);
        const turn = message.runId ? (turns.get(message.runId) ?? ended.get(message.runId)) : undefined;
        const attributes: Attributes = {
          "tiller.session": message.session,
          "tiller.delivery.kind": message.kind,
        };
        if (message.deliveryId) attributes["tiller.delivery.id"] = message.deliveryId;
        if (message.runId) attributes["tiller.run_id"] = message.runId;
        const span = getTracer().startSpan(
          "tiller.deliver",
          { kind: SpanKind.PRODUCER, attributes },
          turn?.ctx ?? context.active(),
        );
        // A channel that throws rather than rejects still ends its span.
        return context
          .with(trace.setSpan(context.active(), span), async () => inner.send(message, options))
          .then(
            (receipt) => {
              const delivered = typeof receipt?.messageId === "string" && receipt.messageId.length > 0;
              span.setAttribute("tiller.delivery.outcome", delivered ? "delivered" : "failed");
              if (delivered) span.setAttribute("tiller.delivery.message_id", receipt.messageId as string);
              else span.setStatus({ code: SpanStatusCode.ERROR, message: "receipt without messageId" });
              span.end();
              return receipt;
            },
            (error: unknown) => {
              span.setAttribute("tiller.delivery.outcome", "failed");
              span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
              span.end();
              throw error;
            },
          );
      }
    });
  }

  return { observe, isOn, channel };
}
