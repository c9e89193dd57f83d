import { MATCH_PREFIX_CHARS } from "./complaint-patterns.js";

/**
 * The `low-overlap` signal's measurements: which content words a message brings, and how many of them a
 * draft repeats. A newest message with few topic words of its own ("1", "why?", "how long will that
 * take?", "and in python?") continues the exchange: the assistant's last visible message and the user
 * message before it are its topic, and only the words it adds to them ("python") must show up in the
 * draft.
 *
 * @example
 * ```ts
 * measureTopic({ draft: "Done, 20:30 it is.", newest: "20:30", older: ["Book a table at Luigi's"], lastAssistant: "19:00 or 20:30?" });
 * // { continuation: true, ... }: the newest adds nothing of its own, so the draft cannot be off-topic
 * ```
 */

const STOPWORDS = new Set(
  (
    "a an and are as at be but by can could did do does for from had has have how i if in into is it its " +
    "just me my no not of on or our please so that the their them then there these they this to too us " +
    "was we were what when where which who why will with would you your yes ok okay also about now " +
    "what's it's i'm don't can't let's tell give show make know think want need get got doesn't isn't " +
    "aren't wasn't won't didn't shouldn't wouldn't couldn't haven't hasn't i've you're they're that's"
  )
    .split(" ")
    // Matched after apostrophes are dropped ("don't" → "dont"), so the list is kept in that form too.
    .map((word) => word.replace(/'/g, "")),
);

// Words that point back at the exchange instead of naming a topic: confirmations, choices, requests to
// go on or compare, reactions. A follow-up made only of them ("sure, the second one", "which is
// faster?", "how long will that take?") adds nothing the draft has to repeat.
const FOLLOW_UP_WORDS = new Set(
  (
    "yeah yep yup sure fine great good nice cool perfect thank thanks awesome alright right lol haha hmm " +
    "huh really wow wait oh ah um uh sounds one ones first second third fourth fifth last other another " +
    "option options choice number more less again else instead any anything something some all both " +
    "either neither long take takes much many cost costs time times fast faster slow slower better best " +
    "worse bigger smaller short shorter longer simpler easier harder cheaper safer quicker " +
    "mean means meant sense example examples detail details explain elaborate continue going keep " +
    "work works worked fix fixed done still try tried same different difference those here " +
    "send sent go ahead proceed start stop undo cancel revert change safe possible enough ready " +
    "then though actually instead honestly exactly okay sounds looks seems like love prefer pick " +
    "happen happens happened come comes sorry yet already anymore exception exceptions alternative " +
    "alternatives downside downsides advantage advantages pros cons tip tips idea ideas suggestion " +
    "suggestions risk risks today tonight tomorrow yesterday soon later earlier " +
    // Edits of the previous answer: the draft is the edited text, it does not repeat the request.
    "sort sorted reorder format reformat rewrite rephrase reword shorten expand simplify summarize " +
    "add remove delete drop swap replace move"
  ).split(" "),
);

const CHOICE = /\bwhich\b/i;
// A statement about the user's situation, not a question and not a correction ("I meant Berlin").
const SITUATION =
  /^\W*(?:i|i'm|im|i've|we|we're|we've|it|it's|its|she|she's|he|he's|they|they're|mine|my|our)\b/i;
const CORRECTION = /\b(?:meant|mean|said|asked|instead|not|actually|rather)\b|\?/i;

function isSituation(text: string): boolean {
  return SITUATION.test(text) && !CORRECTION.test(text);
}

/** A newest message with at most this many topic words of its own inherits the exchange's topic. */
const SHORT_FOLLOW_UP_WORDS = 3;

const WORD = /[\p{L}\p{N}'\u2019]+/gu;
const APOSTROPHES = /['\u2019]/g;
const DIGITS = /^\d+$/;
const CONSONANT = /[b-df-hj-np-tv-z]/;

export function contentTokens(text: string): Set<string> {
  const tokens = new Set<string>();
  const words =
    text
      .slice(0, MATCH_PREFIX_CHARS * 4)
      .toLowerCase()
      .match(WORD) ?? [];
  for (const raw of words) {
    let word = raw.endsWith("'s") || raw.endsWith("\u2019s") ? raw.slice(0, -2) : raw;
    if (word.includes("'") || word.includes("\u2019")) word = word.replace(APOSTROPHES, "");
    if (word.length < 3 || STOPWORDS.has(word) || DIGITS.test(word)) continue;
    tokens.add(stem(word));
  }
  return tokens;
}

/**
 * Light stemming so "files" meets "file", "updated" meets "update" and "checking" meets "check": final
 * e's go too, or "files" → "fil" would never meet "file"; and a doubled consonant left by a suffix, so
 * "dimmed" meets "dim" and "stopping" meets "stop".
 */
function stem(word: string): string {
  let base = word.endsWith("ing")
    ? word.slice(0, -3)
    : word.endsWith("ed")
      ? word.slice(0, -2)
      : word.endsWith("s")
        ? word.slice(0, -1)
        : word;
  let end = base.length;
  while (end > 0 && base[end - 1] === "e") end--;
  base = base.slice(0, end);
  const last = base[base.length - 1];
  if (base !== word && last !== undefined && last === base[base.length - 2] && CONSONANT.test(last))
    base = base.slice(0, -1);
  return base || word;
}

const FOLLOW_UP_STEMS = new Set([...FOLLOW_UP_WORDS].flatMap((word) => [...contentTokens(word)]));

/** The content words a message names itself, without those that only point back at the exchange. */
export function topicWords(text: string): Set<string> {
  const words = contentTokens(text);
  for (const word of words) if (FOLLOW_UP_STEMS.has(word)) words.delete(word);
  return words;
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
  const newestShare = share(contentTokens(newest), draftTokens);
  const best = closestOlder(older, draftTokens);
  return { newest: newestShare.ratio, older: best.ratio, shared: best.shared };
}

export interface TopicFacts {
  draft: string;
  newest: string;
  /** Older user messages, newest first. */
  older: readonly string[];
  /** The user message before the newest (default: `older[0]`). */
  previousUser?: string | undefined;
  /** The assistant's last visible message before the newest user message. */
  lastAssistant?: string | undefined;
}

/** What `low-overlap` decides on, each figure reported when it fires. */
export interface TopicMeasure {
  /** The newest message names no topic of its own beyond the exchange: nothing to be off-topic from. */
  continuation: boolean;
  /** The newest message is a short follow-up: the exchange is its topic, its own new words are the target. */
  inherited: boolean;
  /** How many topic words the draft is expected to repeat. */
  targetWords: number;
  /** Share of those the draft repeats. */
  newestOverlap: number;
  /** Share of the closest older user message's content words the draft repeats. */
  olderOverlap: number;
  /** Words the draft shares with that older message. */
  olderShared: number;
}

export function measureTopic(facts: TopicFacts): TopicMeasure | undefined {
  const draftTokens = contentTokens(facts.draft);
  if (draftTokens.size === 0 || facts.older.length === 0) return undefined;
  const tokensOf = memoTokens();
  const newestTokens = tokensOf(facts.newest);
  const previous = tokensOf(facts.previousUser ?? facts.older[0] ?? "");
  // Words the newest shares with the message before it cannot tell which of the two a draft answers:
  // only what the newest adds counts. A short follow-up also inherits the assistant's last message.
  let target = new Set([...newestTokens].filter((word) => !FOLLOW_UP_STEMS.has(word)));
  const inherited = target.size > 0 && target.size <= SHORT_FOLLOW_UP_WORDS;
  const known = inherited ? new Set([...previous, ...tokensOf(facts.lastAssistant ?? "")]) : previous;
  target = new Set([...target].filter((word) => !known.has(word)));
  // "Which has more caffeine?" asks to choose among the options just given, and "it's raining" or "I
  // work long hours" adds a fact for them to fit: a draft naming one of those options answers it.
  const opening = facts.newest.slice(0, MATCH_PREFIX_CHARS);
  if (inherited && (CHOICE.test(opening) || isSituation(opening))) {
    const options = tokensOf(facts.lastAssistant ?? "");
    if ([...options].some((word) => draftTokens.has(word))) target = new Set();
  }
  const best = closestOlder(facts.older, draftTokens, newestTokens, tokensOf);
  return {
    continuation: target.size === 0,
    inherited,
    targetWords: target.size,
    newestOverlap: share(target, draftTokens).ratio,
    olderOverlap: best.ratio,
    olderShared: best.shared,
  };
}

/** contentTokens, once per distinct text of one assessment (the previous message is also the oldest, ...). */
function memoTokens(): (text: string) => Set<string> {
  const seen = new Map<string, Set<string>>();
  return (text) => {
    let tokens = seen.get(text);
    if (!tokens) {
      tokens = contentTokens(text);
      seen.set(text, tokens);
    }
    return tokens;
  };
}

function share(tokens: ReadonlySet<string>, draftTokens: ReadonlySet<string>) {
  if (tokens.size === 0) return { ratio: 0, shared: 0 };
  let shared = 0;
  for (const token of tokens) if (draftTokens.has(token)) shared++;
  return { ratio: shared / tokens.size, shared };
}

/** The older message the draft repeats most of, counting only the words the newest does not share. */
function closestOlder(
  older: readonly string[],
  draftTokens: ReadonlySet<string>,
  exclude: ReadonlySet<string> = new Set(),
  tokensOf: (text: string) => Set<string> = contentTokens,
) {
  let best = { ratio: 0, shared: 0 };
  for (const message of older) {
    const all = tokensOf(message);
    const distinct = share(new Set([...all].filter((token) => !exclude.has(token))), draftTokens);
    // The ratio counts only what the older message does not share with the newest; the evidence
    // (how many of its words the draft repeats) counts all of them.
    const candidate = { ratio: distinct.ratio, shared: share(all, draftTokens).shared };
    if (candidate.ratio > best.ratio) best = candidate;
  }
  return best;
}
