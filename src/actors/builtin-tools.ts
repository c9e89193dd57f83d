import { z } from "zod";
import type { ToolDefinition } from "../adapters/tool.js";
import type { ActorDeps } from "./deps.js";
import { sendDurably } from "./send.js";

/**
 * The tools every model may call (CONTRACTS.md §2): `message` sends a visible message now;
 * `commitment` records an inferred follow-up (validated here; scheduling comes with commitments).
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
    name: "message",
    description: 'Send a visible message to the user now: { "action": "send", "text": "..." }.',
    parameters: messageArgs,
    cancellable: false,
    async execute(args, context) {
      const parsed = messageArgs.safeParse(args);
      if (!parsed.success)
        throw new Error(`message: ${parsed.error.issues[0]?.message ?? "invalid arguments"}`);
      const facts = deps.runFacts.get(context.runId);
      const kind = facts?.kind === "recovery" ? "recovery" : "reply";
      // Named after the turn's messages and the send's place in the turn: a turn re-run after a crash
      // sends under the same ids, so a channel drops what the user already has.
      const ordinal = facts ? ++facts.sendOrdinal : 1;
      const deliveryId = `message:${context.session}:${facts?.turnKey ?? context.runId}:${ordinal}`;
      const { messageId } = await sendDurably(deps, context.session, parsed.data.text, kind, {
        deliveryId,
        fallbackId: deliveryId,
        runId: context.runId,
        via: facts?.channel,
      });
      if (!messageId) throw new Error("message: the channel did not deliver the message");
      if (facts) facts.messageSends++;
      deps.emit("message.sent", { session: context.session, runId: context.runId, messageId, kind });
      return { sent: true, messageId };
    },
  };
}

export const commitmentArgs = z
  .object({
    kind: z.enum(["open_loop", "deadline_check", "event_check_in", "care_check_in"]),
    reason: z.string().min(1).max(2000).describe("Why a follow-up is owed, in a sentence."),
    suggestedText: z.string().max(4000).default("").describe("A hint for the follow-up, never sent as is."),
    dedupeKey: z
      .string()
      .min(1)
      .max(200)
      .describe("The same key for the same follow-up, so it is kept once."),
    confidence: z.number().min(0).max(1).default(0.5),
    dueWindow: z
      .object({ earliestMs: z.number().nonnegative(), latestMs: z.number().nonnegative() })
      .partial()
      .default({})
      .describe("When it falls due: epoch milliseconds."),
    source: z.string().max(200).default("tool"),
  })
  .strict();

function commitmentTool(deps: ActorDeps): ToolDefinition {
  return {
    name: "commitment",
    description:
      "Record a follow-up you promised (kind, reason, suggestedText, dedupeKey, confidence, dueWindow).",
    parameters: commitmentArgs,
    cancellable: true,
    async execute(args, context) {
      const parsed = commitmentArgs.safeParse(args);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(`commitment.${issue?.path.join(".") ?? ""}: ${issue?.message ?? "invalid"}`);
      }
      deps.emit("commitment.proposed", { session: context.session, runId: context.runId, ...parsed.data });
      return { accepted: true, dedupeKey: parsed.data.dedupeKey, scheduled: deps.config.commitments.enabled };
    },
  };
}
