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

/** Tokens one model call used, as the provider reports them. */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
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
