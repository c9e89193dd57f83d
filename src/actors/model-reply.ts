import { describe, TillerError } from "../errors.js";
import type { ToolCallRequest } from "../policy/turn-context.js";
import type { ModelMessage, ModelReply, ModelUsage } from "../ports/model.js";

/**
 * Checks what a model adapter returned before the run acts on it, so a faulty adapter fails the turn
 * with a reason an operator can read (`MODEL_REPLY_INVALID`), not with whatever a guard tripped over.
 * What is unambiguous is completed: no `text` is an empty text, no `toolCalls` none, a call without
 * `callId` gets one unique in its run, one without `args` empty ones. A call id already in `taken` (the
 * call ids of the context the model saw) or used twice in the reply becomes `<id>-2`, `<id>-3`, ...
 *
 * @example
 * ```ts
 * checkModelReply({ text: "hi" }, "telegram:42#1", 1); // { text: "hi", toolCalls: [] }
 * checkModelReply({ toolCalls: "x" }, "telegram:42#1", 1); // throws TillerError MODEL_REPLY_INVALID
 * ```
 */
export function checkModelReply(
  reply: unknown,
  runId: string,
  call: number,
  taken: Iterable<string> = [],
): ModelReply {
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
  // Results are matched to calls by id: two calls with one id would share a result, and the later one
  // would vanish from the model's context. Some servers send `call_1` for every call, so a repeat (in
  // this reply, or of a call the context already holds) is renamed rather than refused.
  const ids = new Set(taken);
  for (const request of calls) {
    request.callId = uniqueId(request.callId, ids);
    ids.add(request.callId);
  }
  // Reported, never acted on: a provider that sends them in another shape loses only the report.
  const counted = toUsage(usage);
  return {
    text: text ?? "",
    toolCalls: calls,
    ...(typeof finishReason === "string" ? { finishReason } : {}),
    ...(counted ? { usage: counted } : {}),
  };
}

/** `id`, or the first of `id-2`, `id-3`, ... that is not in `ids` (letters, digits, `_` and `-` stay valid for every provider). */
function uniqueId(id: string, ids: ReadonlySet<string>): string {
  if (!ids.has(id)) return id;
  for (let n = 2; ; n++) {
    const candidate = `${id}-${n}`;
    if (!ids.has(candidate)) return candidate;
  }
}

/** The call ids a model context holds, which a reply's new calls must not reuse. */
export function contextCallIds(context: readonly ModelMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const message of context) if (message.role === "toolCall") ids.add(message.callId);
  return ids;
}

/** `{ inputTokens, outputTokens }` as counts, `totalTokens` their sum when the provider gave none. */
function toUsage(value: unknown): ModelUsage | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const { inputTokens, outputTokens, totalTokens } = value as Record<string, unknown>;
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined;
  return {
    inputTokens,
    outputTokens,
    totalTokens: isCount(totalTokens) ? totalTokens : inputTokens + outputTokens,
  };
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
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
