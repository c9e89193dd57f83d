import { z } from "zod";
import { MESSAGE_TOOL } from "../policy/delivery.js";
import type { ToolDefinition } from "../ports/tool.js";
import type { ActorDeps } from "./deps.js";
import { sendDurably } from "./send.js";

/**
 * The tools every model may call (docs/scenarios.md): `message` sends a visible message now;
 * `commitment` records an inferred follow-up (stored when commitments are enabled).
 */
/** Names a gateway's own tools may not take. */
export const BUILTIN_TOOL_NAMES = ["message", "commitment"] as const;

export function builtinTools(deps: ActorDeps): ToolDefinition[] {
  return [messageTool(deps), commitmentTool(deps)];
}

const messageArgs = z.object({
  action: z.literal("send").describe('Always "send".'),
  text: z.string().min(1).max(32_000).describe("The message the user sees."),
});

function messageTool(deps: ActorDeps): ToolDefinition {
  return {
    name: MESSAGE_TOOL,
    description: 'Send a visible message to the user now: { "action": "send", "text": "..." }.',
    parameters: messageArgs,
    cancellable: false,
    async execute(args, context) {
      const parsed = messageArgs.safeParse(args);
      if (!parsed.success)
        throw new Error(`message: ${parsed.error.issues[0]?.message ?? "invalid arguments"}`);
      const kind = context.turnKind === "recovery" ? "recovery" : "reply";
      // Named after the turn's messages and the send's place in the turn: a turn re-run after a crash
      // sends under the same ids, so a channel drops what the user already has.
      const ordinal = context.nextSendOrdinal?.() ?? 1;
      const deliveryId = `message:${context.session}:${context.turnKey ?? context.runId}:${ordinal}`;
      const { messageId } = await sendDurably(deps, context.session, parsed.data.text, kind, {
        deliveryId,
        fallbackId: deliveryId,
        runId: context.runId,
        via: context.channel,
      });
      if (!messageId) throw new Error("message: the channel did not deliver the message");
      deps.emit("message.sent", { session: context.session, runId: context.runId, messageId, kind });
      return { sent: true, messageId };
    },
  };
}

/**
 * The arguments of the `commitment` tool, as the model is told them: the proposal fields of
 * docs/commitments.md. The execute step runs the one validation every commitment passes (policy/commitment-fields.ts);
 * a target the model adds is accepted here and ignored there (a commitment belongs to this session).
 */
const ignored = z.unknown().optional().describe("Ignored: a follow-up always goes to this conversation.");
export const commitmentArgs = z
  .object({
    kind: z.enum(["open_loop", "deadline_check", "event_check_in", "care_check_in"]),
    reason: z.string().min(1).max(1000).describe("Why a follow-up is owed, in a sentence."),
    suggestedText: z.string().max(1000).optional().describe("A hint for the follow-up, never sent as is."),
    dedupeKey: z
      .string()
      .min(1)
      .max(200)
      .describe("The same key for the same follow-up, so it is kept once."),
    confidence: z.number().min(0).max(1).optional().describe("How sure the follow-up is owed (default 0.8)."),
    dueWindow: z
      .object({ earliestMs: z.number().int().nonnegative(), latestMs: z.number().int().nonnegative() })
      .partial()
      .strict()
      .optional()
      .describe("When it falls due: milliseconds from now (default: one heartbeat; latest 12 h later)."),
    source: z.string().min(1).max(100).optional(),
    session: ignored,
    target: ignored,
    to: ignored,
    channel: ignored,
  })
  .strict();

function commitmentTool(deps: ActorDeps): ToolDefinition {
  return {
    name: "commitment",
    description:
      "Record a follow-up to check on later. Before anything is sent, a review reads the conversation " +
      "again; the follow-up goes to this conversation.",
    parameters: commitmentArgs,
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
