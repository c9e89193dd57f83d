/**
 * Stale-reply detection at finalize (docs/architecture.md): does the draft answer the newest user message the
 * turn owns? Three signals, tested in this order: `newer-message`, `complaint`, `low-overlap`.
 * Pure and deterministic; the run machine calls it once per draft.
 *
 * @example
 * ```ts
 * assessDraft({ draft: "4.", newest: "what's 2+2?", older: [], newerArrived: false, settings });
 * // { stale: false }
 * ```
 */

/** Conservative defaults: phrases people use when a reply answered the wrong (older) message. */
export const DEFAULT_COMPLAINT_PATTERNS: readonly string[] = [
  "\\b(you )?(did ?n[o']?t|didnt|never) (answer|address|respond to|reply to) (my|the) (question|message)",
  "\\bnot what i (asked|meant)\\b",
  "\\b(wrong|stale|old|outdated) (answer|reply|response|question)\\b",
  "\\banswer (my|the) (latest|last|new|newest|current|actual) (question|message)\\b",
  "\\bthat was (the|my) (previous|earlier|old|last|other) (question|message)\\b",
  "\\byou('re| are) answering (the|an|my) (wrong|old|previous|earlier)\\b",
  "\\b(read|look at) my (last|latest) message\\b",
  "\\bi asked (about|for) something else\\b",
];

/** Only this many characters of a message are matched against user-supplied patterns. */
export const MATCH_PREFIX_CHARS = 2000;

// A draft that acknowledges the complaint opens with (or contains) one of these.
const ACKNOWLEDGEMENT =
  /\b(sorry|apologi[sz]e|apologies|you'?re right|you are right|my (mistake|bad)|good catch|i missed|to answer your (latest |last |new )?(question|message)|you asked)\b/i;

export interface StaleReplySettings {
  complaintPatterns: readonly RegExp[];
  /** Below this share of the newest message's content tokens, the draft counts as off-topic. */
  minOverlap: number;
}

export type StaleReason = "newer-message" | "complaint" | "low-overlap";

export type DraftVerdict = { stale: false } | { stale: true; reason: StaleReason; detail: string };

export interface DraftFacts {
  draft: string;
  /** The newest user message the turn owns. */
  newest: string;
  /** Older user messages, newest first (this turn's, then recent history). */
  older: readonly string[];
  /** A user message reached the turn after the model call that produced the draft. */
  newerArrived: boolean;
}

export function assessDraft(facts: DraftFacts, settings: StaleReplySettings): DraftVerdict {
  if (facts.newerArrived) {
    return {
      stale: true,
      reason: "newer-message",
      detail: "a user message arrived while the draft was written",
    };
  }
  if (facts.draft.trim().length === 0) return { stale: false };
  const newestPrefix = facts.newest.slice(0, MATCH_PREFIX_CHARS);
  if (settings.complaintPatterns.some((pattern) => pattern.test(newestPrefix))) {
    if (!ACKNOWLEDGEMENT.test(facts.draft.slice(0, MATCH_PREFIX_CHARS))) {
      return {
        stale: true,
        reason: "complaint",
        detail: "the user complained and the draft does not acknowledge it",
      };
    }
    return { stale: false };
  }
  const overlap = compareOverlap(facts.draft, facts.newest, facts.older);
  if (
    overlap &&
    overlap.newest < settings.minOverlap &&
    overlap.older - overlap.newest >= 0.3 &&
    overlap.shared >= 2
  ) {
    return {
      stale: true,
      reason: "low-overlap",
      detail: `draft shares ${pct(overlap.newest)} with the newest message and ${pct(overlap.older)} with an older one`,
    };
  }
  return { stale: false };
}

/**
 * Share of each message's content tokens that the draft repeats. A short fluent answer ("4.") shares
 * nothing with anything, so it never looks closer to an older message than to the newest.
 */
export function compareOverlap(
  draft: string,
  newest: string,
  older: readonly string[],
): { newest: number; older: number; shared: number } | undefined {
  const draftTokens = contentTokens(draft);
  if (draftTokens.size === 0 || older.length === 0) return undefined;
  const share = (message: string) => {
    const tokens = contentTokens(message);
    if (tokens.size === 0) return { ratio: 0, shared: 0 };
    let shared = 0;
    for (const token of tokens) if (draftTokens.has(token)) shared++;
    return { ratio: shared / tokens.size, shared };
  };
  const newestShare = share(newest);
  let best = { ratio: 0, shared: 0 };
  for (const message of older) {
    const candidate = share(message);
    if (candidate.ratio > best.ratio) best = candidate;
  }
  return { newest: newestShare.ratio, older: best.ratio, shared: best.shared };
}

const STOPWORDS = new Set(
  (
    "a an and are as at be but by can could did do does for from had has have how i if in into is it its " +
    "just me my no not of on or our please so that the their them then there these they this to too us " +
    "was we were what when where which who why will with would you your yes ok okay also about now " +
    "what's it's i'm don't can't let's tell give show make know think want need get got"
  ).split(" "),
);

export function contentTokens(text: string): Set<string> {
  const tokens = new Set<string>();
  const words =
    text
      .slice(0, MATCH_PREFIX_CHARS * 4)
      .toLowerCase()
      .match(/[\p{L}\p{N}']+/gu) ?? [];
  for (const raw of words) {
    const word = raw.replace(/'s$/, "").replace(/'/g, "");
    if (word.length < 3 || STOPWORDS.has(word) || /^\d+$/.test(word)) continue;
    // Light stemming so "files" meets "file", "updated" meets "update" and "checking" meets "check":
    // final e's go too, or "files" → "fil" would never meet "file".
    tokens.add(word.replace(/(ing|ed|s)$/, "").replace(/e+$/, "") || word);
  }
  return tokens;
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

const compiled = new Map<string, RegExp[]>();

/**
 * Compiles complaint patterns (case-insensitive), once per distinct list. Patterns are checked for
 * catastrophic backtracking when config loads (config.ts), and matched only on a bounded prefix.
 */
export function compilePatterns(patterns: readonly string[]): RegExp[] {
  const key = patterns.join("\u0000");
  let regexes = compiled.get(key);
  if (!regexes) {
    regexes = patterns.map((pattern) => new RegExp(pattern, "i"));
    compiled.set(key, regexes);
  }
  return regexes;
}
