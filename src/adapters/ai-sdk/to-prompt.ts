import type {
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolCallPart,
  LanguageModelV3ToolResultPart,
} from "@ai-sdk/provider";
import type { ModelMessage } from "../../ports/model.js";
import type { ToolSpec } from "../../ports/tool.js";
import { type ChatMapping, toChatMessages } from "../openai/to-chat-messages.js";

/**
 * Maps a model call's context to an AI SDK prompt. The pairing rules are those of the chat-completions
 * mapping (every call followed by one result, orphan results left out, calls in a row one assistant
 * message), so each provider sees the same conversation; a tool result reaches the model as the same
 * text, marked as an error when the tool failed.
 *
 * @example
 * ```ts
 * toPrompt([{ role: "user", text: "hi", messageId: "m1" }], { system: "Be brief." });
 * // [{ role: "system", content: "Be brief." }, { role: "user", content: [{ type: "text", text: "hi" }] }]
 * ```
 */
export function toPrompt(context: readonly ModelMessage[], mapping: ChatMapping): LanguageModelV3Prompt {
  const failed = new Set<string>();
  for (const message of context)
    if (message.role === "toolResult" && message.status !== "done") failed.add(message.callId);
  const names = new Map<string, string>();
  const prompt: LanguageModelV3Prompt = [];
  let results: LanguageModelV3ToolResultPart[] | undefined;
  for (const message of toChatMessages(context, mapping)) {
    if (message.role === "tool") {
      const id = message.tool_call_id;
      const value = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
      const part: LanguageModelV3ToolResultPart = {
        type: "tool-result",
        toolCallId: id,
        toolName: names.get(id) ?? "",
        output: failed.has(id) ? { type: "error-text", value } : { type: "text", value },
      };
      if (results) results.push(part);
      else {
        results = [part];
        prompt.push({ role: "tool", content: results });
      }
      continue;
    }
    results = undefined;
    const mapped = toMessage(message, names);
    if (mapped) prompt.push(mapped);
  }
  return prompt;
}

type ChatMessage = ReturnType<typeof toChatMessages>[number];

function toMessage(message: ChatMessage, names: Map<string, string>): LanguageModelV3Message | undefined {
  const text = typeof message.content === "string" ? message.content : "";
  if (message.role === "system" || message.role === "developer") return { role: "system", content: text };
  if (message.role === "user") return { role: "user", content: [{ type: "text", text }] };
  if (message.role !== "assistant") return undefined;
  const calls: LanguageModelV3ToolCallPart[] = [];
  for (const call of message.tool_calls ?? []) {
    if (call.type !== "function") continue;
    names.set(call.id, call.function.name);
    calls.push({
      type: "tool-call",
      toolCallId: call.id,
      toolName: call.function.name,
      input: JSON.parse(call.function.arguments),
    });
  }
  return { role: "assistant", content: [...(text ? [{ type: "text" as const, text }] : []), ...calls] };
}

/** Tool specs as AI SDK function tools, their JSON Schemas as they are. */
export function toTools(tools: readonly ToolSpec[]): LanguageModelV3FunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    inputSchema: tool.parameters as LanguageModelV3FunctionTool["inputSchema"],
  }));
}
