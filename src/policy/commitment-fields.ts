import { z } from "zod";
import { expectation } from "../config.js";
import { COMMITMENT_KINDS, type Commitment, type CommitmentKind } from "../ports/commitment.js";

/**
 * The one validation every new commitment passes, whether the `commitment` tool or the
 * `extractCommitments` hook proposed it (docs/commitments.md): fields checked and length-capped, the
 * confidence threshold, and the due-window defaults. The target is never taken from the payload: a
 * commitment belongs to the session that made it (`session`, `target`, `to` and `channel` are dropped).
 *
 * Due windows are given relative to the moment of creation (`earliestMs`, `latestMs`: milliseconds from
 * now). Without `earliestMs` the commitment falls due one heartbeat after creation, and never earlier;
 * without `latestMs` the window ends 12 h after its earliest time; a pending commitment expires
 * `expireAfterMs` (72 h) past its latest time.
 *
 * @example
 * ```ts
 * const result = validateProposal(args, { now: 0, heartbeatMs: 3_600_000, expireAfterMs: 72 * 3_600_000 });
 * if (result.ok) result.fields.dueWindow; // { earliestAt: 3_600_000, latestAt: 46_800_000 }
 * ```
 */
export const MIN_CONFIDENCE = 0.72;
export const MIN_CARE_CONFIDENCE = 0.86;
export const DEFAULT_WINDOW_MS = 12 * 3_600_000;
export const DEFAULT_EXPIRE_AFTER_MS = 72 * 3_600_000;
/** Confidence of a proposal that states none: an explicit tool call is a promise the model chose to keep. */
export const DEFAULT_CONFIDENCE = 0.8;
const MAX_WINDOW_MS = 366 * 24 * 3_600_000;

const IGNORED_TARGET_KEYS = ["session", "target", "to", "channel"] as const;

const text = (max: number) => z.string().trim().max(max);

export const proposalSchema = z
  .object({
    kind: z.enum(COMMITMENT_KINDS),
    reason: text(1000).min(1),
    suggestedText: text(1000).default(""),
    dedupeKey: text(200).min(1),
    confidence: z.number().min(0).max(1).default(DEFAULT_CONFIDENCE),
    dueWindow: z
      .object({
        earliestMs: z.number().int().nonnegative().max(MAX_WINDOW_MS).optional(),
        latestMs: z.number().int().nonnegative().max(MAX_WINDOW_MS).optional(),
      })
      .strict()
      .default({}),
    source: text(100).min(1).optional(),
  })
  .strict()
  .refine(
    (value) =>
      value.dueWindow.latestMs === undefined ||
      value.dueWindow.earliestMs === undefined ||
      value.dueWindow.latestMs >= value.dueWindow.earliestMs,
    { message: "latestMs must not be before earliestMs", path: ["dueWindow", "latestMs"] },
  );

/** A commitment as a tool or an extraction hook proposes it, before the gateway fills in its fields. */
export type CommitmentProposal = z.input<typeof proposalSchema>;

/** The validated fields of a new commitment, with its absolute window. */
export interface ProposalFields {
  kind: CommitmentKind;
  reason: string;
  suggestedText: string;
  dedupeKey: string;
  confidence: number;
  source: string;
  dueWindow: { earliestAt: number; latestAt: number };
  expiresAt: number;
}

export type ProposalResult =
  | { ok: true; fields: ProposalFields }
  | { ok: false; field: string; message: string; invalid: boolean };

export interface WindowSettings {
  now: number;
  heartbeatMs: number;
  expireAfterMs: number;
  /** Used when the proposal names no source. */
  defaultSource?: string;
}

/** Checks a proposal; `invalid: false` marks a well-formed one that is below the confidence threshold. */
export function validateProposal(raw: unknown, settings: WindowSettings): ProposalResult {
  const payload =
    raw && typeof raw === "object" && !Array.isArray(raw)
      ? Object.fromEntries(
          Object.entries(raw).filter(([key]) => !(IGNORED_TARGET_KEYS as readonly string[]).includes(key)),
        )
      : raw;
  const parsed = proposalSchema.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.map(String).join(".") || "(arguments)";
    return { ok: false, field, message: expectation(issue), invalid: true };
  }
  const value = parsed.data;
  const threshold = value.kind === "care_check_in" ? MIN_CARE_CONFIDENCE : MIN_CONFIDENCE;
  if (value.confidence < threshold) {
    return {
      ok: false,
      field: "confidence",
      message: `at least ${threshold} for ${value.kind} (got ${value.confidence})`,
      invalid: false,
    };
  }
  const dueWindow = resolveWindow(value.dueWindow, settings);
  return {
    ok: true,
    fields: {
      kind: value.kind,
      reason: value.reason,
      suggestedText: value.suggestedText,
      dedupeKey: value.dedupeKey,
      confidence: value.confidence,
      source: value.source ?? settings.defaultSource ?? "tool",
      dueWindow,
      expiresAt: dueWindow.latestAt + settings.expireAfterMs,
    },
  };
}

/** Absolute window from a relative one, with the defaults above. */
export function resolveWindow(
  window: { earliestMs?: number | undefined; latestMs?: number | undefined },
  settings: WindowSettings,
): { earliestAt: number; latestAt: number } {
  const floor = settings.now + settings.heartbeatMs;
  const earliestAt = Math.max(settings.now + (window.earliestMs ?? settings.heartbeatMs), floor);
  const latestAt =
    window.latestMs === undefined
      ? earliestAt + DEFAULT_WINDOW_MS
      : Math.max(settings.now + window.latestMs, earliestAt);
  return { earliestAt, latestAt };
}

/**
 * Same session and `dedupeKey` as a pending commitment: one commitment with the widest window, the
 * highest confidence and the newest texts and source (the conversation to review starts there).
 */
export function mergeCommitment(
  existing: Commitment,
  fields: ProposalFields,
  source: { sourceMessageId?: string; sourceRunId?: string },
  now: number,
  expireAfterMs: number,
): Commitment {
  const earliestAt = Math.min(existing.dueWindow.earliestAt, fields.dueWindow.earliestAt);
  const latestAt = Math.max(existing.dueWindow.latestAt, fields.dueWindow.latestAt);
  const { sourceMessageId: _m, sourceRunId: _r, ...rest } = existing;
  return {
    ...rest,
    kind: fields.kind,
    reason: fields.reason,
    suggestedText: fields.suggestedText,
    confidence: Math.max(existing.confidence, fields.confidence),
    dueWindow: { earliestAt, latestAt },
    ...(source.sourceMessageId ? { sourceMessageId: source.sourceMessageId } : {}),
    ...(source.sourceRunId ? { sourceRunId: source.sourceRunId } : {}),
    ...(!source.sourceMessageId && existing.sourceMessageId
      ? { sourceMessageId: existing.sourceMessageId }
      : {}),
    ...(!source.sourceRunId && existing.sourceRunId ? { sourceRunId: existing.sourceRunId } : {}),
    // A retry already scheduled keeps its time; otherwise it is due at the window's start.
    dueAt: existing.attempts > 0 ? Math.max(existing.dueAt, earliestAt) : earliestAt,
    expiresAt: latestAt + expireAfterMs,
    updatedAt: now,
  };
}
