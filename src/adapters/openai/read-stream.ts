import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { describe, ModelError } from "../../errors.js";
import type { ModelReply, ModelUsage, ToolCallRequest } from "../../ports/model.js";

/** What a stream has delivered so far; the caller reads it when the stream fails. */
export interface StreamProgress {
  /** A chunk arrived: from here on a failure is an interruption, never a retry. */
  started: boolean;
  chars: number;
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/**
 * Reads a chat-completions stream into a reply. Text deltas reach `onDelta` as they arrive; tool calls
 * are assembled across chunks by their `index` (several in parallel too): the id and name are set from
 * the chunk that carries them, the argument text is concatenated. The reply is complete only with a
 * `finish_reason`: a stream that ends without one broke off, and fails.
 */
export async function readStream(
  stream: AsyncIterable<ChatCompletionChunk>,
  handlers: { onDelta?: (text: string) => void; onChunk: () => void; fallbackId: (index: number) => string },
  progress: StreamProgress,
): Promise<ModelReply> {
  let text = "";
  const calls = new Map<number, PartialCall>();
  let finishReason: string | undefined;
  let usage: ModelUsage | undefined;
  for await (const chunk of stream) {
    progress.started = true;
    handlers.onChunk();
    if (chunk.usage) usage = toUsage(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      // One completion is asked for (n = 1); a server that sends more gets only the first read.
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (typeof delta?.content === "string" && delta.content.length > 0) {
        text += delta.content;
        progress.chars += delta.content.length;
        handlers.onDelta?.(delta.content);
      }
      for (const part of delta?.tool_calls ?? []) {
        const index = typeof part.index === "number" ? part.index : calls.size;
        let call = calls.get(index);
        if (!call) {
          call = { id: "", name: "", args: "" };
          calls.set(index, call);
        }
        if (part.id) call.id = part.id;
        if (part.function?.name) call.name = part.function.name;
        if (part.function?.arguments) {
          call.args += part.function.arguments;
          progress.chars += part.function.arguments.length;
        }
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  }
  if (finishReason === undefined) throw new Error("the stream ended before the reply was complete");
  const toolCalls = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, call], position) => toToolCall(call, position, handlers.fallbackId(index)));
  return { text, toolCalls, finishReason, ...(usage ? { usage } : {}) };
}

function toToolCall(call: PartialCall, position: number, fallbackId: string): ToolCallRequest {
  if (!call.name)
    throw new ModelError("MODEL_REPLY_INVALID", `model reply: tool call ${position} has no function name`);
  let args: unknown;
  try {
    args = call.args.trim() === "" ? {} : JSON.parse(call.args);
  } catch {
    throw new ModelError(
      "MODEL_REPLY_INVALID",
      `model reply: the arguments of tool call ${position} (${call.name}) are not valid JSON: ${describe(call.args)}`,
    );
  }
  if (args === null || typeof args !== "object" || Array.isArray(args))
    throw new ModelError(
      "MODEL_REPLY_INVALID",
      `model reply: the arguments of tool call ${position} (${call.name}) must be a JSON object, received ${describe(args)}`,
    );
  return { callId: call.id || fallbackId, name: call.name, args: args as Record<string, unknown> };
}

function toUsage(usage: NonNullable<ChatCompletionChunk["usage"]>): ModelUsage {
  const inputTokens = usage.prompt_tokens ?? 0;
  const outputTokens = usage.completion_tokens ?? 0;
  return { inputTokens, outputTokens, totalTokens: usage.total_tokens ?? inputTokens + outputTokens };
}
