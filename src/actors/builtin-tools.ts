import { z } from "zod";
import type { ToolDefinition } from "../adapters/tool.js";
import { proposalSchema } from "../policy/commitment-fields.js";
import { send } from "./deliver.js";
import type { ActorDeps } from "./deps.js";

/**
 * The tools every model may call (CONTRACTS.md §2): `message` sends a visible message now;
 * `commitment` records an inferred follow-up (stored when commitments are enabled).
 */
/** Names a gateway's own tools may not take. */
export const BUILTIN_TOOL_NAMES = ["message", "commitment"] as const;

export function builtinTools(deps: ActorDeps): ToolDefinition[] {
  return [messageTool(deps), commitmentTool(deps)];
}

const messageArgs = z.object({ action: z.literal("send"), text: z.string().min(1).max(32_000) });

function messageTool(deps: ActorDeps): ToolDefinition {
  return {
    name: "message",
    description: 'Send a visible message to the user now: { "action": "send", "text": "..." }.',
    cancellable: false,
    async execute(args, context) {
      const parsed = messageArgs.safeParse(args);
      if (!parsed.success)
        throw new Error(`message: ${parsed.error.issues[0]?.message ?? "invalid arguments"}`);
      const facts = deps.runFacts.get(context.runId);
      const kind = facts?.kind === "recovery" ? "recovery" : "reply";
      const messageId = await send(
        deps,
        context.session,
        parsed.data.text,
        kind,
        context.runId,
        facts?.channel,
      );
      if (!messageId) throw new Error("message: the channel did not deliver the message");
      if (facts) facts.messageSends++;
      deps.emit("message.sent", { session: context.session, runId: context.runId, messageId, kind });
      return { sent: true, messageId };
    },
  };
}

/**
 * The arguments of the `commitment` tool: the proposal fields of DESIGN.md §5, checked by the one
 * validation every commitment passes (policy/commitment-fields.ts).
 */
export const commitmentArgs = proposalSchema;

function commitmentTool(deps: ActorDeps): ToolDefinition {
  return {
    name: "commitment",
    description:
      "Record a follow-up to check on later: { kind: open_loop|deadline_check|event_check_in|care_check_in, " +
      "reason, suggestedText, dedupeKey, confidence (0..1), dueWindow: { earliestMs, latestMs } (ms from now) }. " +
      "Before anything is sent, a review reads the conversation again; the follow-up goes to this conversation.",
    cancellable: true,
    async execute(args, context) {
      if (!deps.config.commitments.enabled || !deps.proposeCommitment)
        return {
          accepted: false,
          reason: "commitments are off in this gateway (commitments.enabled: false)",
        };
      const outcome = (await deps.proposeCommitment(context.session, args, {
        source: "tool",
        runId: context.runId,
      })) as { accepted: boolean; reason?: string; field?: string };
      // A malformed call is the model's to fix: a failed result that names the field.
      if (!outcome.accepted && outcome.field && outcome.field !== "confidence")
        throw new Error(`commitment.${outcome.reason}`);
      return outcome;
    },
  };
}
