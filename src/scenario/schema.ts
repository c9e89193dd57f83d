import { z } from "zod";
import { channelSchema } from "./channel-spec.js";
import { expectSchema } from "./expect-schema.js";

/** The scenario file (docs/scenarios.md), validated with zod; `config` is checked by parseConfig. */
const whenSchema = z
  .object({
    latestUser: z.string().optional(),
    call: z.number().int().positive().optional(),
    turn: z.number().int().positive().optional(),
    recheck: z.boolean().optional(),
    recovery: z.boolean().optional(),
    review: z.boolean().optional(),
    session: z.string().optional(),
    hasToolResult: z.string().optional(),
    /** A review of this commitment (by id). */
    commitment: z.string().min(1).optional(),
    /** The nth review (1-based) of that commitment, counting every review begun in the process. */
    reviewNumber: z.number().int().positive().optional(),
  })
  .strict();

const replySchema = z
  .object({
    text: z.string().optional(),
    toolCalls: z
      .array(
        z.object({ name: z.string().min(1), args: z.record(z.string(), z.unknown()).optional() }).strict(),
      )
      .optional(),
    delayMs: z.number().nonnegative().optional(),
    error: z.string().optional(),
  })
  .strict();

const toolSchema = z
  .object({
    description: z.string().optional(),
    /** JSON Schema of the arguments; calls that do not fit fail without running. */
    parameters: z.record(z.string(), z.unknown()).optional(),
    readOnly: z.boolean().optional(),
    /** Scopes the turn's authority must hold; a call without them is refused. */
    requires: z.array(z.string().min(1)).optional(),
    durationMs: z.number().nonnegative().default(0),
    result: z.unknown().optional(),
    cancellable: z.boolean().default(false),
    error: z.string().optional(),
    /** The tool runs a child turn with this task (`context.runSubagent`); its result is the child's final. */
    subagent: z
      .object({ text: z.string().min(1), tools: z.array(z.string()).optional() })
      .strict()
      .optional(),
  })
  .strict();

const inboundSchema = z
  .object({
    at: z.number().nonnegative(),
    session: z.string().min(1),
    channel: z.string().min(1),
    id: z.string().min(1),
    text: z.string(),
    mode: z.string().optional(),
    /** An edit: the id of the earlier message this one replaces. */
    editOf: z.string().min(1).optional(),
    /** Who wrote it (group chats); checked like any inbound sender when it arrives. */
    sender: z
      .object({ id: z.string(), name: z.string().optional(), authority: z.array(z.string()).optional() })
      .strict()
      .optional(),
    /** `user` (default): a person's message; anything else is a turn nobody typed (`gateway.trigger`). */
    trigger: z.string().min(1).optional(),
  })
  .strict();

const commitmentSchema = z
  .object({
    id: z.string().min(1),
    session: z.string().min(1),
    kind: z.enum(["open_loop", "deadline_check", "event_check_in", "care_check_in"]),
    source: z.string().default("scenario"),
    reason: z.string(),
    suggestedText: z.string().default(""),
    dedupeKey: z.string(),
    confidence: z.number().min(0).max(1).default(0.5),
    dueAt: z.number().nonnegative(),
    /** Absolute ms on the simulated clock; `latestMs` defaults to 12 h after `dueAt`. */
    dueWindow: z
      .object({ earliestMs: z.number().nonnegative(), latestMs: z.number().nonnegative() })
      .partial()
      .strict()
      .optional(),
    createdAt: z.number().optional(),
    sourceMessageId: z.string().optional(),
    sourceRunId: z.string().optional(),
    status: z.enum(["pending", "sent", "dismissed", "expired"]).default("pending"),
  })
  .passthrough();

export const scenarioSchema = z
  .object({
    name: z.string().default("scenario"),
    description: z.string().optional(),
    config: z.unknown().optional(),
    model: z.array(z.object({ when: whenSchema.optional(), reply: replySchema }).strict()).default([]),
    tools: z.record(z.string(), toolSchema).default({}),
    channels: z.record(z.string(), channelSchema).default({}),
    inbound: z.array(inboundSchema).default([]),
    commitments: z.array(commitmentSchema).default([]),
    restart: z.array(z.object({ at: z.number().nonnegative() }).strict()).default([]),
    /** An operator dismisses a commitment at `at` (`gateway.commitments.dismiss(id)`). */
    dismiss: z.array(z.object({ at: z.number().nonnegative(), id: z.string().min(1) }).strict()).default([]),
    until: z.number().positive().optional(),
    expect: expectSchema.optional(),
  })
  .strict();

export type Scenario = z.output<typeof scenarioSchema>;
