/**
 * The `complaint` signal's vocabulary: what people write when a reply answered the wrong (older)
 * message, and what a re-drafted reply says when it owns up to that. Each pattern names the person who
 * answered ("you answered my previous question", "that answer is for the earlier question") or the
 * message that was missed, so a message that only uses the same words about something else ("the FAQ
 * has the wrong answer, please fix the FAQ") is not a complaint. Every pattern is proven safe from
 * catastrophic backtracking by the config tests, and matched only on a bounded prefix of a message.
 *
 * @example
 * ```ts
 * matchComplaint("You answered my previous question, not this one.", compilePatterns(DEFAULT_COMPLAINT_PATTERNS));
 * // the source of the pattern that matched
 * acknowledgesComplaint("Sorry, that was stale. The deploy command is make deploy."); // true
 * ```
 */

/** Only this many characters of a message are matched against complaint and acknowledgement patterns. */
export const MATCH_PREFIX_CHARS = 2000;

const STALE = "(?:wrong|stale|old|older|outdated|previous|earlier)";
const EARLIER = "(?:previous|earlier|old|older|first|other|last|wrong)";
const NEWEST = "(?:latest|current|new|newest|last|actual|real|most recent)";
// "Reply to my last message" may mean a message elsewhere (a thread, an email): only "latest" and kin.
const NEWEST_SENT = "(?:latest|current|new|newest|most recent)";

/** Conservative defaults; `staleReplyRecheck.complaintPatterns` replaces them. Case-insensitive. */
export const DEFAULT_COMPLAINT_PATTERNS: readonly string[] = [
  // "you're answering the wrong question", "you are replying to my old message", "you're stale"
  `\\byou(?:(?:'re| are|r| were)(?: still)?(?: (?:answering|replying|responding|looking|talking|stuck)(?: to| at| about| on)?| on)?| (?:keep |still )?(?:answering|replying|responding)(?: to)?) (?:the |my |an? )?${STALE}\\b`,
  // "you didn't answer my question", "did not answer the question", "you never answered my message"
  `(?:\\byou(?: still)? |^\\W{0,3}(?:still |but )?)(?:did ?n[o'\u2019]?t|did not|didnt|never|have ?n[o'\u2019]?t|still have ?n[o'\u2019]?t)(?: even| really| actually)? (?:answer(?:ed)?|address(?:ed)?|respond(?:ed)? to|repl(?:y|ied) to|read|look(?:ed)? at) (?:(?:my|the) (?:question|message|latest|last|ask|request)|what i (?:asked|said|wrote|meant))`,
  // "that's the wrong answer", "that's an old answer", "your answer is outdated", "wrong answer." at the start
  `\\b(?:that|this|it)(?:'s|s| is| was)? (?:an? |the )?${STALE} (?:answer|reply|response|question)\\b|^\\W{0,3}(?:wrong|stale|old) (?:answer|reply|response|question)\\b|\\byour (?:answer|reply|response) (?:is|was|'s) (?:wrong|stale|old|outdated)\\b`,
  // "wrong question", "wrong-question"
  "(?:^\\W{0,3}|\\b(?:the|a) )wrong[- ]question\\b",
  // "stale reply", "stale answer"
  "\\bstale[- ](?:reply|replies|answer|response)\\b",
  // "you answered my previous question", "you replied to the wrong message"
  `\\byou(?:'ve| have| just| keep)? (?:answered|answer|replied to|responded to|addressed) (?:my |the |your |an? )?${EARLIER} (?:question|message|one|ask|request|thing)`,
  // "that answer is for the earlier question", "this is the answer to the previous question"
  `\\b(?:that|this|it|your)(?:'s| is| was)? (?:an? |the )?(?:answer|reply|response)s?(?: is| was)? (?:to|for|about) (?:my |the |your |an? )?${EARLIER} (?:question|message|one)|\\b(?:that|this|it) (?:answers|addresses) (?:my |the )${EARLIER} (?:question|message|one)`,
  // "please address my latest question", "answer my new question", "respond to my latest message"
  `\\b(?:answer|address|focus on)(?: to)? (?:my |the )?${NEWEST} (?:question|message|ask|request|one)\\b|\\b(?:respond|reply) to (?:my |the )?${NEWEST_SENT} (?:question|message|one)\\b|\\banswer (?:the|my) question i (?:just |actually )?asked\\b`,
  // "can you recheck? that looks stale", "re-check, you repeated the previous answer"
  // (the unbounded ".*" of the usual form backtracks quadratically; a short bound keeps it provably safe)
  "\\bre-?check\\b[^\\n]{0,28}?\\b(?:stale|duplicat|previous)",
  // "that's not what I asked", "not the question I asked"
  "\\bnot (?:what|the question|the thing) i (?:asked|meant|wanted|said)\\b",
  // "that was my previous question"
  "\\bthat was (?:the|my) (?:previous|earlier|old|last|other) (?:question|message)\\b",
  // "read my last message again", "Read my last message, please." (but not "read my last message to Bob")
  "\\b(?:re-?read|read|look at|check) my (?:last|latest|newest|new) message (?:again|first|properly|carefully)\\b|\\bre-?read my (?:last|latest|newest) message\\b|^\\W{0,3}(?:please )?(?:read|look at) my (?:last|latest|newest) message(?:,? please)?[.!]{0,3}$",
  // "I asked about something else", "I asked you something different"
  "\\bi asked (?:you )?(?:about |for )?something (?:else|different)\\b",
  // "you missed my question", "you ignored my last question"
  "\\byou (?:missed|ignored|skipped|overlooked|forgot)(?: my| the)?(?: last| latest| new| actual)? (?:question|message)\\b",
  // "that doesn't answer my question", "this reply doesn't match my question"
  "\\b(?:does ?n[o'\u2019]?t|does not|doesnt) (?:answer|address|match|respond to) (?:my|the|what i)\\b",
  // "I asked about the tests, not the deploy"
  "\\bi (?:asked|was asking|meant)(?: you)? (?:about|for) [^.?!,]{1,28}, not\\b",
  // "you're ignoring what I just said", "are you ignoring me?", "you completely ignored what I said"
  "\\b(?:you(?:'re| are)?|are you|why are you)(?: just| completely| still| totally)? ignor(?:ing|ed|e) (?:me\\b|my (?:last |latest )?messages?\\b|what i (?:just )?(?:said|wrote|asked)\\b)",
  // "did you even read my message?", "you didn't read what I wrote", "you're not reading my messages"
  "\\b(?:did you (?:even |actually )?read|you did ?n[o'\u2019]?t (?:even )?read|you(?:'re| are) not reading) (?:my (?:last |latest )?messages?|what i (?:just )?(?:said|wrote))\\b",
  // a bare nudge: "hello??", "helloooo???", "Hello? Anyone there?" (the whole message, nothing asked)
  "^\\W{0,3}(?:hello+|hey+|hi+)\\s?\\?{1,}(?:\\s*(?:anyone|anybody|are you) (?:there|here|listening)\\?*)?\\W{0,3}$",
];

// A re-drafted reply owns up to the complaint (in its opening) with one of these. "Sorry to hear" is
// sympathy, not an acknowledgement; "you asked me earlier" recalls, it does not own up.
const ACKNOWLEDGEMENT = new RegExp(
  [
    "\\b(?:sorry|apologi[sz]e|apologies)\\b(?! to hear)",
    "\\byou(?:'re| are) (?:right|correct|absolutely right)\\b",
    "\\b(?:my (?:mistake|bad|fault)|good catch|fair point|oops|whoops)\\b",
    "\\bi (?:missed|misread|skipped|ignored|overlooked|mixed (?:them|those|it|these) up|was still on)\\b",
    "\\bi (?:answered|replied to|responded to) (?:the |your )?(?:wrong|earlier|previous|old|first|other)\\b",
    "\\bthanks for (?:flagging|pointing|catching|the correction)",
    "\\b(?:to answer|answering|replying to|on|for|reading) your (?:latest|last|new|newest|current|actual|second|updated) (?:question|message|one)\\b",
    "\\bi see (?:your|the) (?:updated|new|latest|actual) (?:question|message)\\b",
    "\\byou(?: just)? asked (?:about|for|whether|if|how|what|why|when|where|which)\\b",
    "\\bthat (?:was|reply was|answer was) (?:stale|wrong|for your (?:earlier|previous|first))\\b",
  ].join("|"),
  "i",
);

/** The source of the first pattern that matches the message's prefix, or undefined. */
export function matchComplaint(message: string, patterns: readonly RegExp[]): string | undefined {
  const prefix = message.slice(0, MATCH_PREFIX_CHARS);
  return patterns.find((pattern) => pattern.test(prefix))?.source;
}

/** Does the reply's prefix acknowledge that an earlier reply missed the user's question? */
export function acknowledgesComplaint(reply: string): boolean {
  return ACKNOWLEDGEMENT.test(reply.slice(0, MATCH_PREFIX_CHARS));
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
