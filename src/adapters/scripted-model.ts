import { type Clock, sleep } from "../ports/clock.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../ports/model.js";
import { latestUserText } from "../ports/model.js";

/** A commitment review's run id: `commitment:<id>#<attempt>`. */
const REVIEW_PREFIX = "commitment:";

/** Conditions of a scripted rule; all given ones must hold (docs/scenarios.md). */
export interface ScriptedWhen {
  latestUser?: string;
  call?: number;
  /** 1-based turn within the session, counted in the order this model first sees each run. */
  turn?: number;
  recheck?: boolean;
  recovery?: boolean;
  review?: boolean;
  session?: string;
  hasToolResult?: string;
  /** A commitment review of this commitment id. */
  commitment?: string;
  /** The nth review (1-based) of the call's commitment this model sees, counting every review begun. */
  reviewNumber?: number;
}

export interface ScriptedReply {
  text?: string;
  toolCalls?: Array<{ name: string; args?: Record<string, unknown> }>;
  delayMs?: number;
  error?: string;
}

/** One rule of a {@link ScriptedModel}: when the request matches, the model answers with this text or tool calls. */
export interface ScriptedRule {
  when?: ScriptedWhen;
  reply: ScriptedReply;
}

/**
 * A model that answers from rules, tried in order at every call; the first rule whose `when` holds
 * replies after `delayMs` on the clock, streaming its text through `onDelta` first. No rule matching
 * is an error, so a scenario cannot silently depend on a default.
 *
 * @example
 * ```ts
 * const model = new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock);
 * ```
 */
export class ScriptedModel implements ModelProvider {
  // Run ids per session in the order first seen: a run's turn number is its position + 1.
  private readonly turns = new Map<string, string[]>();
  // Reviews begun per commitment id (a retried review may reuse its run id, so they are counted).
  private readonly reviews = new Map<string, number>();

  constructor(
    private readonly rules: readonly ScriptedRule[],
    private readonly clock: Clock,
  ) {}

  async complete(request: ModelRequest): Promise<ModelReply> {
    const latest = latestUserText(request.context);
    const turn = this.turnOf(request);
    const review = this.reviewOf(request);
    const rule = this.rules.find((candidate) => matches(candidate.when, request, latest, turn, review));
    if (!rule) throw new Error(`scripted model: no rule matches call ${request.call} of ${request.runId}`);
    const { reply } = rule;
    if (reply.delayMs) await sleep(this.clock, reply.delayMs, request.signal);
    if (request.signal.aborted) throw request.signal.reason;
    if (reply.error) throw new Error(reply.error);
    const text = (reply.text ?? "").replaceAll("{{latestUser}}", latest);
    // Streamed as one delta, at the reply's time on the clock (a real provider sends many).
    if (text) request.onDelta?.(text);
    return {
      text,
      toolCalls: (reply.toolCalls ?? []).map((call, index) => ({
        callId: `${request.runId}-c${request.call}-${index + 1}`,
        name: call.name,
        args: call.args ?? {},
      })),
    };
  }

  /** The commitment a review call is about and which of its reviews this is. */
  private reviewOf(request: ModelRequest): { commitment: string; number: number } | undefined {
    if (!request.review || !request.runId.startsWith(REVIEW_PREFIX)) return undefined;
    const end = request.runId.lastIndexOf("#");
    const commitment = request.runId.slice(REVIEW_PREFIX.length, end < 0 ? undefined : end);
    const seen = this.reviews.get(commitment) ?? 0;
    const number = request.call === 1 ? seen + 1 : Math.max(seen, 1);
    this.reviews.set(commitment, number);
    return { commitment, number };
  }

  private turnOf(request: ModelRequest): number {
    let runs = this.turns.get(request.session);
    if (!runs) {
      runs = [];
      this.turns.set(request.session, runs);
    }
    let index = runs.indexOf(request.runId);
    if (index < 0) index = runs.push(request.runId) - 1;
    return index + 1;
  }
}

function matches(
  when: ScriptedWhen | undefined,
  request: ModelRequest,
  latest: string,
  turn: number,
  review: { commitment: string; number: number } | undefined,
): boolean {
  if (!when) return true;
  if (when.commitment !== undefined && when.commitment !== review?.commitment) return false;
  if (when.reviewNumber !== undefined && when.reviewNumber !== review?.number) return false;
  if (when.turn !== undefined && when.turn !== turn) return false;
  if (when.latestUser !== undefined && !latest.toLowerCase().includes(when.latestUser.toLowerCase()))
    return false;
  if (when.call !== undefined && when.call !== request.call) return false;
  if (when.recheck !== undefined && when.recheck !== request.recheck) return false;
  if (when.recovery !== undefined && when.recovery !== request.recovery) return false;
  if (when.review !== undefined && when.review !== request.review) return false;
  if (when.session !== undefined && when.session !== request.session) return false;
  if (when.hasToolResult !== undefined && !hasToolResult(request, when.hasToolResult)) return false;
  return true;
}

function hasToolResult(request: ModelRequest, name: string): boolean {
  const turn = request.context.slice(request.turnStart);
  const names = new Map<string, string>();
  for (const message of turn) if (message.role === "toolCall") names.set(message.callId, message.name);
  return turn.some((message) => message.role === "toolResult" && names.get(message.callId) === name);
}
