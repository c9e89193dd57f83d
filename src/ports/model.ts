import type { Sender } from "./sender.js";
import type { ToolSpec } from "./tool.js";

/**
 * The model port: one streaming completion per call. Implementations honour `signal` (stop streaming
 * and reject with its reason) and may report text deltas through `onDelta`.
 *
 * @example
 * ```ts
 * const reply = await model.complete({ ...request, onDelta: (text) => process.stdout.write(text) });
 * if (reply.toolCalls.length === 0) console.log(reply.text);
 * ```
 */
export interface ModelProvider {
  complete(request: ModelRequest): Promise<ModelReply>;
}

/** What the gateway asks of the model for one call: the context window, the tools and an abort signal. */
export interface ModelRequest {
  session: string;
  runId: string;
  /** 1-based model call within the turn. */
  call: number;
  /** This call is a stale-reply re-check pass. */
  recheck: boolean;
  /** This call belongs to a stranded-reply recovery turn. */
  recovery: boolean;
  /** This call is a commitment review. */
  review: boolean;
  context: ModelMessage[];
  /** Index in `context` where the current turn begins (everything before is history). */
  turnStart: number;
  /**
   * Every tool this call may use (the built-in `message` and `commitment` included), each with its
   * description and the JSON Schema of its arguments.
   */
  tools: ToolSpec[];
  signal: AbortSignal;
  onDelta?: (text: string) => void;
  /**
   * The gateway's instructions (config `model.instructions`): a provider sends them as its system
   * prompt, first, before anything of `context`. Absent when none are configured.
   */
  instructions?: string;
  /** Sampling temperature (config `model.temperature`). @default the provider's */
  temperature?: number;
  /** The longest reply in tokens (config `model.maxOutputTokens`). @default the provider's */
  maxOutputTokens?: number;
  /** The longest wait for the first data and the longest silence within the stream (config `model.timeoutMs`). @default the provider's */
  timeoutMs?: number;
}

/** The per-call settings of {@link ModelRequest} that come from the gateway's `model` config. */
export type ModelCallSettings = Pick<
  ModelRequest,
  "instructions" | "temperature" | "maxOutputTokens" | "timeoutMs"
>;

/** The `model` config as request fields, the absent ones left out. */
export function callSettings(config: {
  instructions?: string | undefined;
  temperature?: number | undefined;
  maxOutputTokens?: number | undefined;
  timeoutMs?: number | undefined;
}): ModelCallSettings {
  const settings: ModelCallSettings = {};
  if (config.instructions) settings.instructions = config.instructions;
  if (config.temperature !== undefined) settings.temperature = config.temperature;
  if (config.maxOutputTokens !== undefined) settings.maxOutputTokens = config.maxOutputTokens;
  if (config.timeoutMs !== undefined) settings.timeoutMs = config.timeoutMs;
  return settings;
}

/**
 * The system prompt of a call: a provider's own (`system` option) and the gateway's instructions, in
 * that order, separated by a blank line; "" when neither is set.
 */
export function systemPrompt(own: string | undefined, request: Pick<ModelRequest, "instructions">): string {
  return [own, request.instructions].filter((part): part is string => Boolean(part)).join("\n\n");
}

/** What the model answered for one call: its text, its tool calls and its token usage where reported. */
export interface ModelReply {
  text: string;
  toolCalls: ToolCallRequest[];
  /** Why the model stopped, as the provider says it (`stop`, `tool_calls`, `length`, ...). */
  finishReason?: string;
  /** Tokens the call used, when the provider reports them. */
  usage?: ModelUsage;
}

/** Token counts of one model call (or, on `turn.ended`, of a turn's calls summed). */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** The provider's total; the gateway fills in `inputTokens + outputTokens` when it gives none. */
  totalTokens?: number;
}

/** A tool call the model asked for. */
export interface ToolCallRequest {
  callId: string;
  name: string;
  args: Record<string, unknown>;
}

/** One entry of what a model call sees. */
export type ModelMessage =
  | { role: "user"; text: string; messageId: string; sender?: Sender }
  | { role: "assistant"; text: string }
  | { role: "toolCall"; callId: string; name: string; args: unknown }
  | { role: "toolResult"; callId: string; status: string; result: unknown }
  | { role: "note"; text: string };

/** Newest user message text of a model context, "" when there is none. */
export function latestUserText(context: readonly ModelMessage[]): string {
  for (let i = context.length - 1; i >= 0; i--) {
    const message = context[i];
    if (message?.role === "user") return message.text;
  }
  return "";
}
