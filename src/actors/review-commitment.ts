import { randomBytes } from "node:crypto";
import { fromPromise } from "xstate";
import { invalidArgsResult } from "../adapters/tool-schema.js";
import { errorMessage } from "../errors.js";
import {
  CLASSIFICATIONS,
  type Classification,
  type Commitment,
  type ReviewOutput,
} from "../machines/commitment.types.js";
import {
  followUpProblem,
  isStillPending,
  settledByTranscript,
  sourceStartIndex,
} from "../policy/commitment-review.js";
import { DECISION_TOOL, reviewContext } from "../policy/review-prompt.js";
import { historyToModel } from "../policy/turn-context.js";
import { DeadlineError, withDeadline } from "../ports/clock.js";
import { callSettings, latestUserText, type ModelMessage } from "../ports/model.js";
import type { TranscriptRecord } from "../ports/store.js";
import type { ToolSpec } from "../ports/tool.js";
import type { ActorDeps } from "./deps.js";
import { linkedAbort } from "./linked-abort.js";
import { checkModelReply, contextCallIds } from "./model-reply.js";

/** What the review model is told about `commitment_decision`. */
const DECISION_SPEC: ToolSpec = {
  name: DECISION_TOOL,
  description:
    "Your decision on the follow-up: its classification and, only when still pending, the message to send now.",
  parameters: {
    type: "object",
    properties: {
      classification: { type: "string", enum: [...CLASSIFICATIONS] },
      text: { type: "string", description: "The follow-up to send, composed from the current state." },
    },
    required: ["classification"],
    additionalProperties: false,
  },
};

/** Records before the source turn the review also sees ("a little before"). */
const CONTEXT_BEFORE = 4;
/** The newest records a review sees at most. */
const CONTEXT_MAX = 200;

/** What a review needs beyond the actor deps: the gateway's view of its sessions and hooks. */
export interface ReviewGate {
  /** Counts messages accepted for the session (any change during a review voids it). */
  arrivals(session: string): number;
  /** The session has a turn running or waiting: a review now would read a transcript about to change. */
  isBusy(session: string): boolean;
  /** Aborted when a message for the session arrives. */
  watch(session: string): { signal: AbortSignal; release(): void };
  sentInWindow(session: string, now: number): number;
  /** The gateway's current-state snapshot for the review, when it has one. */
  snapshot?(commitment: Commitment, signal: AbortSignal): unknown;
  /** Remembers the arrivals count a decision was made at (the send checks it again). */
  decided(id: string, arrivals: number): void;
  settings: { timeoutMs: number; maxCalls: number };
}

/**
 * The review of a due commitment (docs/commitments.md), run by the gateway inside the session's lane: the
 * transcript first (a user answer or correction and a reply after the source settle it with no model
 * call), else a `review: true` model call over the conversation since the source, with the record
 * fenced as untrusted data, the read-only tools and `commitment_decision`. No usable decision, an error
 * or a timeout is `unclear`; a message arriving meanwhile voids the result.
 */
export function createReviewCommitment(deps: ActorDeps, gate: ReviewGate) {
  return fromPromise<ReviewOutput, Commitment>(async ({ input: commitment, signal }) => {
    const { session } = commitment;
    const startArrivals = gate.arrivals(session);
    const watch = gate.watch(session);
    const control = linkedAbort(signal);
    const onMessage = () => control.abort(new Error("a user message arrived during the review"));
    watch.signal.addEventListener("abort", onMessage, { once: true });
    const result = (
      classification: Classification,
      via: ReviewOutput["via"],
      fields: { text?: string; why?: string } = {},
    ): ReviewOutput => {
      const at = deps.clock.now();
      const voided = gate.arrivals(session) !== startArrivals || watch.signal.aborted;
      if (!voided) gate.decided(commitment.id, startArrivals);
      return {
        voided,
        classification,
        via,
        text: fields.text ?? "",
        ...(voided
          ? { why: "a user message arrived during the review" }
          : fields.why
            ? { why: fields.why }
            : {}),
        at,
        sentInWindow: gate.sentInWindow(session, at),
      };
    };
    try {
      if (gate.isBusy(session))
        return {
          ...result("unclear", "none"),
          voided: true,
          why: "the session has a turn running or waiting",
        };
      const records = await deps.writer.read(session);
      const verdict = settledByTranscript(records, commitment);
      if (verdict.settled) return result(verdict.classification, "transcript", { why: verdict.why });
      const decision = await withDeadline(
        deps.clock,
        modelReview(deps, gate, commitment, records, control.signal),
        gate.settings.timeoutMs,
        control.signal,
      );
      return result(decision.classification, decision.via, decision);
    } catch (error) {
      if (watch.signal.aborted) return result("unclear", "none");
      if (error instanceof DeadlineError) {
        control.abort(error);
        return result("unclear", "none", { why: `no decision within ${gate.settings.timeoutMs} ms` });
      }
      deps.logger.warn({ session, id: commitment.id, error: errorMessage(error) }, "commitment.reviewFailed");
      return result("unclear", "none", { why: `the review failed: ${errorMessage(error)}` });
    } finally {
      watch.signal.removeEventListener("abort", onMessage);
      watch.release();
      control.release();
    }
  });
}

interface Decision {
  classification: Classification;
  via: ReviewOutput["via"];
  text?: string;
  why?: string;
}

async function modelReview(
  deps: ActorDeps,
  gate: ReviewGate,
  commitment: Commitment,
  records: readonly TranscriptRecord[],
  signal: AbortSignal,
): Promise<Decision> {
  const { session } = commitment;
  const start = Math.max(
    0,
    sourceStartIndex(records, commitment) - CONTEXT_BEFORE,
    records.length - CONTEXT_MAX,
  );
  const history = historyToModel(records.slice(start));
  const nonce = randomBytes(12).toString("base64url");
  const readOnly = [...deps.tools.values()].filter((tool) => tool.readOnly === true).map((tool) => tool.name);
  const snapshot = await currentState(gate, commitment, signal);
  const runId = `commitment:${commitment.id}#${commitment.attempts + 1}`;
  const { context, turnStart } = reviewContext(history, commitment, {
    nonce,
    now: deps.clock.now(),
    tools: readOnly,
    reviewId: runId,
    ...(snapshot !== undefined ? { snapshot } : {}),
  });
  const tools: ToolSpec[] = [
    ...readOnly.flatMap((name) => {
      const spec = deps.toolSchemas.get(name)?.spec;
      return spec ? [spec] : [];
    }),
    DECISION_SPEC,
  ];
  for (let call = 1; call <= gate.settings.maxCalls; call++) {
    deps.emit("model.called", {
      session,
      runId,
      call,
      recheck: false,
      recovery: false,
      review: true,
      commitmentId: commitment.id,
      latestUser: latestUserText(context),
      userTexts: [],
      messageIds: [],
    });
    const raw = await deps.model.complete({
      session,
      runId,
      call,
      recheck: false,
      recovery: false,
      review: true,
      context,
      turnStart,
      tools,
      signal,
      ...callSettings(deps.config.model),
    });
    const reply = checkModelReply(raw, runId, call, contextCallIds(context));
    const decisionCall = reply.toolCalls.find((toolCall) => toolCall.name === DECISION_TOOL);
    if (decisionCall) return readDecision(decisionCall.args, commitment, nonce);
    if (reply.toolCalls.length === 0)
      return { classification: "unclear", via: "model", why: "the review ended without a decision" };
    for (const toolCall of reply.toolCalls) {
      context.push({ role: "toolCall", callId: toolCall.callId, name: toolCall.name, args: toolCall.args });
      const result = await readOnlyCall(deps, session, runId, toolCall, readOnly, signal);
      context.push({ role: "toolResult", callId: toolCall.callId, ...result } as ModelMessage);
    }
  }
  return {
    classification: "unclear",
    via: "model",
    why: `no decision in ${gate.settings.maxCalls} model calls`,
  };
}

function readDecision(args: Record<string, unknown>, commitment: Commitment, nonce: string): Decision {
  const classification = args.classification;
  if (typeof classification !== "string" || !(CLASSIFICATIONS as readonly string[]).includes(classification))
    return {
      classification: "unclear",
      via: "model",
      why: `classification ${JSON.stringify(classification)} is not one of ${CLASSIFICATIONS.join(", ")}`,
    };
  const text = typeof args.text === "string" ? args.text.trim() : "";
  if (!isStillPending(classification as Classification))
    return { classification: classification as Classification, via: "model" };
  const problem = followUpProblem(text, commitment, nonce);
  if (problem) return { classification: "unclear", via: "model", why: problem };
  return { classification: classification as Classification, via: "model", text };
}

async function currentState(
  gate: ReviewGate,
  commitment: Commitment,
  signal: AbortSignal,
): Promise<string | undefined> {
  if (!gate.snapshot) return undefined;
  const value = await gate.snapshot(commitment, signal);
  if (value === undefined || value === null) return undefined;
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A review's tool call: read-only tools run (within limits.toolTimeoutMs), any other is refused. */
async function readOnlyCall(
  deps: ActorDeps,
  session: string,
  runId: string,
  toolCall: { callId: string; name: string; args: Record<string, unknown> },
  allowed: readonly string[],
  signal: AbortSignal,
): Promise<{ status: string; result: unknown }> {
  const fields = { session, runId, callId: toolCall.callId, name: toolCall.name, args: toolCall.args };
  const tool = allowed.includes(toolCall.name) ? deps.tools.get(toolCall.name) : undefined;
  deps.emit("tool.started", fields);
  if (!tool) {
    const outcome = {
      status: "refused",
      result: { error: `"${toolCall.name}" is not available in a commitment review` },
    };
    deps.emit("tool.ended", { ...fields, status: "refused" });
    return outcome;
  }
  const checked = deps.toolSchemas.get(tool.name)?.check(toolCall.args) ?? { ok: true, args: toolCall.args };
  if (!checked.ok) {
    deps.emit("tool.ended", { ...fields, status: "failed" });
    return { status: "failed", result: invalidArgsResult(checked.problems) };
  }
  const control = linkedAbort(signal, tool.cancellable);
  try {
    const value = await withDeadline(
      deps.clock,
      tool.execute(checked.args, { session, runId, callId: toolCall.callId, signal: control.signal }),
      deps.config.limits.toolTimeoutMs,
      signal,
    );
    const json = JSON.stringify(value);
    deps.emit("tool.ended", { ...fields, status: "done" });
    return { status: "done", result: json === undefined ? null : JSON.parse(json) };
  } catch (error) {
    if (signal.aborted) throw error;
    deps.emit("tool.ended", { ...fields, status: "failed" });
    return { status: "failed", result: { error: errorMessage(error) } };
  } finally {
    control.release();
  }
}
