import { type Clock, sleep } from "../ports/clock.js";
import {
  latestUserText,
  type ModelMessage,
  type ModelProvider,
  type ModelReply,
  type ModelRequest,
} from "../ports/model.js";
import type { ToolDefinition } from "../ports/tool.js";

/** The demo's slow tool: long enough to write while it runs (steer, `/stop`, `/queue`). */
export const DEMO_TOOL = "demo_task";

/** Tools the demo never calls by name (they need arguments it does not make up). */
const NOT_BY_NAME = new Set(["message", "commitment", "commitment_decision", DEMO_TOOL]);

/** Words that make the demo model start its slow tool. */
const WORK = /\b(task|tasks|work|job|build|run|process|slow|tool)\b/i;

export const DEMO_NOTICE =
  "[demo] Scripted demo model, no language model: start tiller serve with --model-url for a real one.";

/** Options of the demo model that `tiller serve` runs when no model URL is given. */
export interface DemoModelOptions {
  clock: Clock;
  /** Pause between streamed words. @default 25 */
  wordDelayMs?: number;
}

/**
 * A small scripted agent for trying the gateway without a model: it says it is a demo in its first
 * reply of a session, starts the slow `demo_task` tool when asked for work ("run a task"), answers
 * what was written while the tool ran, and streams every reply word by word, so steering, `/stop` and
 * the stale-reply re-check can be watched. It honours the abort signal at every word.
 *
 * @example
 * ```ts
 * const clock = new SystemClock();
 * const gateway = createGateway({ model: new DemoModel({ clock }), tools: [demoTool({ clock })], channels });
 * ```
 */
export class DemoModel implements ModelProvider {
  private readonly wordDelayMs: number;

  constructor(private readonly options: DemoModelOptions) {
    this.wordDelayMs = options.wordDelayMs ?? 25;
  }

  async complete(request: ModelRequest): Promise<ModelReply> {
    const turn = request.context.slice(request.turnStart);
    const latest = latestUserText(request.context);
    const results = turn.filter(
      (message): message is Extract<ModelMessage, { role: "toolResult" }> => message.role === "toolResult",
    );
    const names = toolNames(request);
    // What this turn's user messages ask for, newest first: a message steered in while the reply was
    // being written may ask for work too.
    const asks = turn
      .filter((message) => message.role === "user")
      .map((message) => message.text)
      .reverse();
    // A tool of the user's own (`--tools`) named in a message is called with the message as input.
    const byName = names.filter((name) => !NOT_BY_NAME.has(name));
    const named = asks.flatMap((text) =>
      byName.filter((name) => mentions(text, name)).map((name) => ({ name, text })),
    )[0];
    const work = names.includes(DEMO_TOOL) ? asks.find((text) => WORK.test(text)) : undefined;
    const call = named ?? (work !== undefined ? { name: DEMO_TOOL, text: work } : undefined);
    if (results.length === 0 && call !== undefined) {
      await this.stream(request, `Starting ${call.name} for "${clip(call.text)}".`);
      const args = call.name === DEMO_TOOL ? { task: clip(call.text) } : { input: call.text };
      return {
        text: "",
        toolCalls: [{ callId: `${request.runId}-c${request.call}`, name: call.name, args }],
      };
    }
    const text = [this.isFirstReply(request) ? DEMO_NOTICE : "", this.answer(request, turn, results, latest)]
      .filter(Boolean)
      .join("\n\n");
    await this.stream(request, text);
    return { text, toolCalls: [] };
  }

  private isFirstReply(request: ModelRequest): boolean {
    return !request.context.slice(0, request.turnStart).some((message) => message.role === "assistant");
  }

  private answer(
    request: ModelRequest,
    turn: ModelMessage[],
    results: Array<Extract<ModelMessage, { role: "toolResult" }>>,
    latest: string,
  ): string {
    const users = turn.filter((message) => message.role === "user").map((message) => message.text);
    const lines: string[] = [];
    if (request.recheck) lines.push(recheckLine(turn));
    const last = results.at(-1);
    if (last) {
      const call = turn.find((message) => message.role === "toolCall" && message.callId === last.callId);
      const name = call?.role === "toolCall" ? call.name : DEMO_TOOL;
      const outcome =
        last.status === "done"
          ? `${name} finished: ${describeResult(last.result)}.`
          : `${name} did not finish (${last.status}).`;
      lines.push(outcome);
      const later = users.slice(1);
      if (later.length > 0)
        lines.push(`While it ran you wrote: ${later.map((text) => `"${clip(text)}"`).join(", ")}. Noted.`);
      return lines.join(" ");
    }
    lines.push(`You said: "${clip(latest)}".`);
    if (!request.recheck)
      lines.push(
        `Ask me to "run a task" to start a slow tool, then write while it runs (steer, /stop, /queue followup).`,
      );
    return lines.join(" ");
  }

  private async stream(request: ModelRequest, text: string): Promise<void> {
    const words = text.split(/(?<=\s)/);
    for (const word of words) {
      await sleep(this.options.clock, this.wordDelayMs, request.signal);
      request.onDelta?.(word);
    }
    if (request.signal.aborted) throw request.signal.reason;
  }
}

export interface DemoToolOptions {
  clock: Clock;
  /** How long one run takes. @default 5000 */
  durationMs?: number;
}

/**
 * The demo's slow tool. Cancellable: `/stop` or an interrupt cancels it at once; a steered message
 * waits for it to finish.
 *
 * @example
 * ```ts
 * const tools = [demoTool({ clock, durationMs: 3000 })];
 * ```
 */
export function demoTool(options: DemoToolOptions): ToolDefinition {
  const durationMs = options.durationMs ?? 5000;
  return {
    name: DEMO_TOOL,
    description: `A slow demo task (${durationMs / 1000} s) that pretends to do the work it is given.`,
    parameters: {
      type: "object",
      properties: { task: { type: "string", description: "What to pretend to do" } },
      required: ["task"],
    },
    cancellable: true,
    async execute(args, { signal }) {
      await sleep(options.clock, durationMs, signal);
      return { done: true, task: String(args.task ?? ""), tookMs: durationMs };
    },
  };
}

function toolNames(request: ModelRequest): string[] {
  return request.tools.map((tool) => tool.name);
}

function describeResult(result: unknown): string {
  if (result && typeof result === "object" && "task" in result)
    return `"${clip(String((result as { task: unknown }).task))}" is done`;
  return clip(typeof result === "string" ? result : JSON.stringify(result));
}

/** Whether `text` names `tool` as a whole word. */
function mentions(text: string, tool: string): boolean {
  const at = text.indexOf(tool);
  if (at < 0) return false;
  const before = text[at - 1] ?? " ";
  const after = text[at + tool.length] ?? " ";
  return !/\w/.test(before) && !/\w/.test(after);
}

function clip(text: string, max = 120): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Why this reply was drafted again, from the re-check's own note: a complaint is not a message that
 * came in while answering, and the demo must not claim one did.
 */
function recheckLine(turn: readonly ModelMessage[]): string {
  const note = turn.findLast((message) => message.role === "note")?.text ?? "";
  if (note.startsWith("A newer user message arrived"))
    return "(Re-checked: your newest message came in while I was answering.)";
  if (note.startsWith("The user says the previous reply missed"))
    return "(Re-checked: you said my previous reply missed your question, so here is a direct answer.)";
  return "(Re-checked my draft against your newest message.)";
}
