import { describe, TillerError } from "../errors.js";
import type { ToolCallRequest } from "../policy/turn-context.js";
import type { ModelReply, ModelUsage } from "../ports/model.js";

/**
 * Checks what a model adapter returned before the run acts on it, so a faulty adapter fails the turn
 * with a reason an operator can read (`MODEL_REPLY_INVALID`), not with whatever a guard tripped over.
 * What is unambiguous is completed: no `text` is an empty text, no `toolCalls` none, a call without
 * `callId` gets one unique in its run, one without `args` empty ones.
 *
 * @example
 * ```ts
 * checkModelReply({ text: "hi" }, "telegram:42#1", 1); // { text: "hi", toolCalls: [] }
 * checkModelReply({ toolCalls: "x" }, "telegram:42#1", 1); // throws TillerError MODEL_REPLY_INVALID
 * ```
 */
export function checkModelReply(reply: unknown, runId: string, call: number): ModelReply {
  if (reply === null || typeof reply !== "object") invalid("the reply", "an object", reply);
  const { text, toolCalls, finishReason, usage } = reply as {
    text?: unknown;
    toolCalls?: unknown;
    finishReason?: unknown;
    usage?: unknown;
  };
  if (text !== undefined && typeof text !== "string") invalid("text", "a string", text);
  if (toolCalls !== undefined && !Array.isArray(toolCalls)) invalid("toolCalls", "an array", toolCalls);
  const calls = (toolCalls ?? []).map((request: unknown, index) => toolCall(request, index, runId, call));
  const ids = new Set<string>();
  for (const [index, { callId }] of calls.entries()) {
    // Results are matched to calls by id: two calls with one id would share a result.
    if (ids.has(callId)) invalid(`toolCalls[${index}].callId`, "unique in the reply", callId);
    ids.add(callId);
  }
  // Reported, never acted on: a provider that sends them in another shape loses only the report.
  return {
    text: text ?? "",
    toolCalls: calls,
    ...(typeof finishReason === "string" ? { finishReason } : {}),
    ...(isUsage(usage) ? { usage } : {}),
  };
}

function isUsage(value: unknown): value is ModelUsage {
  if (value === null || typeof value !== "object") return false;
  const { inputTokens, outputTokens, totalTokens } = value as Record<string, unknown>;
  return [inputTokens, outputTokens, totalTokens].every(
    (count) => typeof count === "number" && Number.isFinite(count),
  );
}

function toolCall(request: unknown, index: number, runId: string, call: number): ToolCallRequest {
  const field = `toolCalls[${index}]`;
  if (request === null || typeof request !== "object") invalid(field, "an object", request);
  const { callId, name, args } = request as { callId?: unknown; name?: unknown; args?: unknown };
  if (typeof name !== "string" || name.length === 0) invalid(`${field}.name`, "a tool name", name);
  if (callId !== undefined && (typeof callId !== "string" || callId.length === 0))
    invalid(`${field}.callId`, "a non-empty string", callId);
  if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args)))
    invalid(`${field}.args`, "an object", args);
  // The call is stored before the tool runs: arguments with no JSON form could never be.
  if (args !== undefined && !hasJsonForm(args)) invalid(`${field}.args`, "JSON-serializable", args);
  return {
    callId: (callId as string | undefined) ?? `${runId}-c${call}-${index + 1}`,
    name,
    args: (args as Record<string, unknown> | undefined) ?? {},
  };
}

function hasJsonForm(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

function invalid(field: string, expected: string, received: unknown): never {
  throw new TillerError(
    "MODEL_REPLY_INVALID",
    `model reply: ${field} must be ${expected}, received ${describe(received)}`,
  );
}
