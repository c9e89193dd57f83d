import type { ModelMessage, ToolCallRequest } from "../turn.js";

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
  /** Names of the tools the model may call. */
  tools: string[];
  signal: AbortSignal;
  onDelta?: (text: string) => void;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCallRequest[];
}
