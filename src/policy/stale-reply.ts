import { acknowledgesComplaint, matchComplaint } from "./complaint-patterns.js";
import { measureTopic, type TopicMeasure } from "./topic-overlap.js";

/**
 * Stale-reply detection at finalize (docs/recheck.md): does the draft answer the newest user message the
 * turn owns? Three signals, tested in this order: `newer-message`, `complaint`, `low-overlap`.
 * Pure and deterministic; the run machine calls it once per draft, and a stale verdict carries the
 * figures it was decided on, so an operator can see why it fired.
 *
 * @example
 * ```ts
 * assessDraft({ draft: "4.", newest: "what's 2+2?", older: [], newerArrived: false }, settings);
 * // { stale: false }
 * ```
 */

export {
  acknowledgesComplaint,
  compilePatterns,
  DEFAULT_COMPLAINT_PATTERNS,
  MATCH_PREFIX_CHARS,
  matchComplaint,
} from "./complaint-patterns.js";
export { compareOverlap, contentTokens, measureTopic, topicWords } from "./topic-overlap.js";

export interface StaleReplySettings {
  complaintPatterns: readonly RegExp[];
  /** Below this share of the newest message's topic words, the draft counts as off-topic. */
  minOverlap: number;
}

/** Which signal said a draft no longer answers the newest user message. */
export type StaleReason = "newer-message" | "complaint" | "low-overlap";

/** The numbers and names behind a verdict: flat, JSON-serializable, shown in `recheck.*` events. */
export type RecheckFigures = Record<string, number | string | boolean>;

/** Whether a draft is stale, and by which signals. */
export type DraftVerdict =
  | { stale: false }
  | { stale: true; reason: StaleReason; detail: string; figures?: RecheckFigures };

/** What the stale-reply check reads: the draft, the newest user message it owns and the ones before it. */
export interface DraftFacts {
  draft: string;
  /** The newest user message the turn owns. */
  newest: string;
  /** Older user messages, newest first (this turn's, then recent history). */
  older: readonly string[];
  /** A user message reached the turn after the model call that produced the draft. */
  newerArrived: boolean;
  /** The user message before the newest (default: `older[0]`). */
  previousUser?: string | undefined;
  /**
   * The assistant's last visible message before the newest user message: with the previous user
   * message, the topic a short follow-up ("why?", "the second one", "and in python?") continues.
   */
  lastAssistant?: string | undefined;
}

// An older message must be this much closer to the draft than the newest one, over at least two words.
const OLDER_MARGIN = 0.3;
const OLDER_MIN_SHARED = 2;

/**
 * Enough words to call a draft off-topic: two of the older message's, or one when the draft also
 * ignores every one of at least two words the newest message brings ("how do I descale my kettle?").
 */
function hasEvidence(topic: TopicMeasure): boolean {
  if (topic.olderShared >= OLDER_MIN_SHARED) return true;
  return topic.olderShared >= 1 && topic.targetWords >= OLDER_MIN_SHARED && topic.newestOverlap === 0;
}

/** Tests a draft against the three stale-reply signals (newer message, complaint, low overlap). */
export function assessDraft(facts: DraftFacts, settings: StaleReplySettings): DraftVerdict {
  if (facts.newerArrived) {
    return {
      stale: true,
      reason: "newer-message",
      detail: "a user message arrived while the draft was written",
      figures: {},
    };
  }
  if (facts.draft.trim().length === 0) return { stale: false };
  const pattern = matchComplaint(facts.newest, settings.complaintPatterns);
  if (pattern !== undefined) {
    if (acknowledgesComplaint(facts.draft)) return { stale: false };
    return {
      stale: true,
      reason: "complaint",
      detail: "the user complained and the draft does not acknowledge it",
      figures: { pattern, acknowledged: false },
    };
  }
  const topic = measureTopic(facts);
  if (
    topic &&
    !topic.continuation &&
    topic.newestOverlap < settings.minOverlap &&
    topic.olderOverlap - topic.newestOverlap >= OLDER_MARGIN &&
    hasEvidence(topic)
  ) {
    return {
      stale: true,
      reason: "low-overlap",
      detail:
        `draft shares ${pct(topic.newestOverlap)} with the newest message` +
        `${topic.inherited ? " (beyond the exchange it continues)" : ""}` +
        ` and ${pct(topic.olderOverlap)} with an older one`,
      figures: {
        newestOverlap: round(topic.newestOverlap),
        olderOverlap: round(topic.olderOverlap),
        olderShared: topic.olderShared,
        targetWords: topic.targetWords,
        inherited: topic.inherited,
        minOverlap: settings.minOverlap,
      },
    };
  }
  return { stale: false };
}

/** The instruction the model receives on a re-check pass. */
export function reanchorInstruction(reason: StaleReason, newest: string): string {
  const quoted = JSON.stringify(newest.slice(0, 500));
  if (reason === "complaint") {
    return (
      `The user says the previous reply missed their question: ${quoted}. Open by acknowledging that, ` +
      "then answer their newest message directly, or say explicitly what you are deferring and why."
    );
  }
  return (
    `A newer user message arrived while you were drafting: ${quoted}. Your draft answers an older message. ` +
    "Address the newest message, or explicitly say that you will come back to it."
  );
}

function pct(ratio: number): string {
  return `${Math.round(ratio * 100)}%`;
}

function round(ratio: number): number {
  return Math.round(ratio * 1000) / 1000;
}
