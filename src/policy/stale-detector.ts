import { describe } from "../errors.js";
import type { DraftFacts, DraftVerdict, RecheckFigures, StaleReason } from "./stale-reply.js";

/**
 * The pluggable detector (`staleReplyRecheck.detect`): a function of the same facts the built-in
 * signals read, returning the verdict, at once or as a promise. A gateway author plugs a model-based
 * judge or a classifier here; the built-in signals stay the default, and decide instead whenever the
 * detector throws, returns something that is not a verdict, or does not answer within
 * `staleReplyRecheck.detectTimeoutMs`.
 *
 * @example
 * ```ts
 * const detect: StaleDetector = async (facts, { signal }) => {
 *   const stale = await myJudge({ draft: facts.draft, newest: facts.newest, signal });
 *   return stale ? { stale: true, reason: "low-overlap", detail: "the judge says the draft is off-topic" } : { stale: false };
 * };
 * createGateway({ model, channels, config: { staleReplyRecheck: { detect, detectTimeoutMs: 3000 } } });
 * ```
 */
export type StaleDetector = (
  facts: DraftFacts,
  context: { signal: AbortSignal },
) => DetectorVerdict | Promise<DetectorVerdict>;

/** What a detector returns: a verdict whose `detail` and `figures` are optional. */
export type DetectorVerdict =
  | { stale: false }
  | { stale: true; reason: StaleReason; detail?: string; figures?: RecheckFigures };

const REASONS: readonly StaleReason[] = ["newer-message", "complaint", "low-overlap"];

/**
 * Checks a detector's answer: a verdict, or a sentence saying what is wrong with it (the caller turns
 * that into a fallback to the built-in signals).
 */
export function toVerdict(value: unknown): DraftVerdict | string {
  if (value === null || typeof value !== "object")
    return `expected a verdict object, received ${describe(value)}`;
  const candidate = value as Record<string, unknown>;
  if (candidate.stale === false) return { stale: false };
  if (candidate.stale !== true)
    return `expected stale to be true or false, received ${describe(candidate.stale)}`;
  const reason = candidate.reason;
  if (typeof reason !== "string" || !REASONS.includes(reason as StaleReason))
    return `expected reason to be one of ${REASONS.join(", ")}, received ${describe(reason)}`;
  const detail = candidate.detail ?? "the gateway's detector judged the draft stale";
  if (typeof detail !== "string") return `expected detail to be a string, received ${describe(detail)}`;
  const figures: RecheckFigures = {};
  if (candidate.figures !== undefined) {
    if (
      candidate.figures === null ||
      typeof candidate.figures !== "object" ||
      Array.isArray(candidate.figures)
    )
      return `expected figures to be an object, received ${describe(candidate.figures)}`;
    for (const [key, figure] of Object.entries(candidate.figures)) {
      if (typeof figure !== "number" && typeof figure !== "string" && typeof figure !== "boolean")
        return `expected figures.${key} to be a number, string or boolean, received ${describe(figure)}`;
      figures[key] = typeof figure === "string" ? figure.slice(0, 500) : figure;
    }
  }
  return { stale: true, reason: reason as StaleReason, detail: detail.slice(0, 500), figures };
}

/** Who decided a verdict: the built-in signals, or the gateway's own detector. */
export type DetectorName = "built-in" | "custom";
