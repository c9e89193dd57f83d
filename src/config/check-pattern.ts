import { checkSync } from "recheck";
import { ConfigError } from "../errors.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "../policy/stale-reply.js";

// The built-in patterns are proven safe by test/config.test.ts, so a process does not start the
// checker (hundreds of milliseconds) unless a user supplies patterns of their own.
const checkedPatterns = new Map<string, string | null>(
  DEFAULT_COMPLAINT_PATTERNS.map((pattern) => [pattern, null]),
);

/** Rejects a pattern that does not compile or that can backtrack catastrophically. */
export function checkPattern(field: string, pattern: string): void {
  try {
    new RegExp(pattern, "i");
  } catch (error) {
    throw new ConfigError(field, "a valid regular expression", pattern, { cause: error });
  }
  let verdict = checkedPatterns.get(pattern);
  if (verdict === undefined) {
    const diagnostics = checkSync(pattern, "i", { timeout: 2000 });
    verdict =
      diagnostics.status === "safe"
        ? null
        : diagnostics.status === "vulnerable"
          ? `vulnerable to catastrophic backtracking (${diagnostics.complexity.summary})`
          : "could not be proven safe from catastrophic backtracking";
    checkedPatterns.set(pattern, verdict);
  }
  if (verdict)
    throw new ConfigError(field, `a regular expression that is safe to match (${verdict})`, pattern);
}

/** Every problem of a config at once, each naming its field; the first one is the error's own field. */
