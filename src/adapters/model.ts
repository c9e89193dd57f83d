import type { ModelMessage, ToolCallRequest } from "../turn.js";
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

export interface ModelReply {
  text: string;
  toolCalls: ToolCallRequest[];
  /** Why the model stopped, as the provider says it (`stop`, `tool_calls`, `length`, ...). */
  finishReason?: string;
  /** Tokens the call used, when the provider reports them. */
  usage?: ModelUsage;
}

export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}
