import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type { ModelMessage } from "../../ports/model.js";
import type { ToolSpec } from "../../ports/tool.js";

export interface ChatMapping {
  /** A system prompt placed first. */
  system?: string;
  /**
   * The role Tiller's own notes take (the re-anchor instruction, the undelivered-final note, notes on
   * dropped messages): `system`, or `user` for servers whose chat template refuses a system message
   * after the first. @default "system"
   */
  notesAs?: "system" | "user";
}

/** Shown when a tool call has no result anywhere in the context (a window that starts mid-turn). */
export const NO_RESULT = JSON.stringify({
  status: "cancelled",
  result: "no result was recorded for this call; its outcome is unknown",
});

/**
 * Maps a model call's context to chat-completions messages, in order. Tool traffic is regrouped so a
 * strict server never sees an assistant `tool_calls` message without a `tool` message for each id
 * right after it, nor a `tool` message whose call it was not shown: consecutive tool calls (with the
 * assistant text just before them) become one assistant message, followed by their results in call
 * order; a call without a result gets one that says so; a result whose call is not in the context is
 * left out (its call fell outside the window); anything the context holds between a call and its
 * result follows the results.
 *
 * @example
 * ```ts
 * toChatMessages([{ role: "user", text: "hi", messageId: "m1" }], { system: "Be brief." });
 * // [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }]
 * ```
 */
export function toChatMessages(
  context: readonly ModelMessage[],
  mapping: ChatMapping = {},
): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (mapping.system) out.push({ role: "system", content: mapping.system });
  const results = new Map<string, string>();
  for (const message of context) {
    if (message.role === "toolResult" && !results.has(message.callId))
      results.set(message.callId, resultContent(message.status, message.result));
  }

  // The open group: one assistant message and the ids of its calls, closed by any other message.
  let group: { message: ChatCompletionAssistantMessageParam; ids: string[] } | null = null;
  const emitted = new Set<string>();
  const closeGroup = () => {
    if (!group) return;
    for (const id of group.ids)
      out.push({ role: "tool", tool_call_id: id, content: results.get(id) ?? NO_RESULT });
    group = null;
  };

  for (const message of context) {
    switch (message.role) {
      case "toolCall": {
        if (emitted.has(message.callId)) break;
        emitted.add(message.callId);
        if (!group) {
          // Text that came with the calls is the same assistant message as the calls.
          const previous = out.at(-1);
          const assistant: ChatCompletionAssistantMessageParam =
            previous?.role === "assistant" && !previous.tool_calls
              ? previous
              : { role: "assistant", content: null };
          if (assistant !== previous) out.push(assistant);
          group = { message: assistant, ids: [] };
        }
        group.message.tool_calls = [
          ...(group.message.tool_calls ?? []),
          {
            id: message.callId,
            type: "function",
            function: { name: message.name, arguments: JSON.stringify(message.args ?? {}) },
          },
        ];
        group.ids.push(message.callId);
        break;
      }
      case "toolResult":
        // Emitted with its call's group; an orphan (its call outside the context) is left out.
        break;
      default: {
        closeGroup();
        const mapped = plainMessage(message, mapping.notesAs ?? "system");
        if (mapped) out.push(mapped);
      }
    }
  }
  closeGroup();
  return out;
}

function plainMessage(
  message: Exclude<ModelMessage, { role: "toolCall" | "toolResult" }>,
  notesAs: "system" | "user",
): ChatCompletionMessageParam | undefined {
  if (message.role === "user") return { role: "user", content: message.text };
  // Some servers refuse an assistant message with empty content: an empty draft says nothing anyway.
  if (message.role === "assistant")
    return message.text ? { role: "assistant", content: message.text } : undefined;
  return message.text ? { role: notesAs, content: message.text } : undefined;
}

/** A tool result as the model reads it: the result itself when done, else its status beside it. */
function resultContent(status: string, result: unknown): string {
  if (status === "done") return typeof result === "string" ? result : JSON.stringify(result ?? null);
  return JSON.stringify({ status, result: result ?? null });
}

/** Tool specs as chat-completions function tools. */
export function toChatTools(tools: readonly ToolSpec[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.parameters,
    },
  }));
}
