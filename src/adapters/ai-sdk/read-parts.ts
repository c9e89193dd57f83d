import type { LanguageModelV3StreamPart, LanguageModelV3Usage } from "@ai-sdk/provider";
import { describe, ModelError } from "../../errors.js";
import type { ModelReply, ModelUsage, ToolCallRequest } from "../../ports/model.js";
import type { StreamProgress } from "../openai/read-stream.js";

/** The AI SDK's unified finish reasons in the words of the chat-completions provider. */
const FINISH: Record<string, string> = {
  stop: "stop",
  length: "length",
  "content-filter": "content_filter",
  "tool-calls": "tool_calls",
  error: "error",
  other: "other",
};

/**
 * Reads an AI SDK stream into a reply. Text deltas reach `onDelta` as they arrive; tool calls are
 * taken whole from `tool-call` parts (the provider assembled their input); the finish part gives the
 * finish reason and usage. An `error` part fails the call; a stream that ends without a finish part
 * broke off. Every part counts as data for the silence timeout (`onPart`).
 */
export async function readParts(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  handlers: { onDelta?: (text: string) => void; onPart: () => void },
  progress: StreamProgress,
): Promise<ModelReply> {
  let text = "";
  const toolCalls: ToolCallRequest[] = [];
  let finish: { reason: string; usage?: ModelUsage } | undefined;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      handlers.onPart();
      switch (part.type) {
        case "text-delta":
          if (part.delta.length === 0) break;
          progress.started = true;
          text += part.delta;
          progress.chars += part.delta.length;
          handlers.onDelta?.(part.delta);
          break;
        case "reasoning-delta":
        case "tool-input-start":
        case "tool-input-delta":
          progress.started = true;
          break;
        case "tool-call":
          progress.started = true;
          if (part.providerExecuted) break; // run by the provider itself: nothing for the gateway to do
          toolCalls.push(toToolCall(part.toolCallId, part.toolName, part.input, toolCalls.length));
          break;
        case "finish": {
          const usage = toUsage(part.usage);
          finish = {
            reason: FINISH[part.finishReason.unified] ?? part.finishReason.unified,
            ...(usage ? { usage } : {}),
          };
          break;
        }
        case "error":
          throw part.error;
      }
    }
  } finally {
    reader.releaseLock();
  }
  if (!finish) throw new Error("the stream ended before the reply was complete");
  return { text, toolCalls, finishReason: finish.reason, ...(finish.usage ? { usage: finish.usage } : {}) };
}

function toToolCall(id: string, name: string, input: string, position: number): ToolCallRequest {
  let args: unknown;
  try {
    args = input.trim() === "" ? {} : JSON.parse(input);
  } catch {
    throw new ModelError(
      "MODEL_REPLY_INVALID",
      `model reply: the arguments of tool call ${position} (${name}) are not valid JSON: ${describe(input)}`,
    );
  }
  if (args === null || typeof args !== "object" || Array.isArray(args))
    throw new ModelError(
      "MODEL_REPLY_INVALID",
      `model reply: the arguments of tool call ${position} (${name}) must be a JSON object, received ${describe(args)}`,
    );
  return { callId: id, name, args: args as Record<string, unknown> };
}

/** Totals of the AI SDK's usage, when the provider reported either. */
function toUsage(usage: LanguageModelV3Usage | undefined): ModelUsage | undefined {
  const input = usage?.inputTokens?.total;
  const output = usage?.outputTokens?.total;
  if (input === undefined && output === undefined) return undefined;
  return { inputTokens: input ?? 0, outputTokens: output ?? 0, totalTokens: (input ?? 0) + (output ?? 0) };
}
