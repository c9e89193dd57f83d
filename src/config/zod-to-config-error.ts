import type { z } from "zod";
import { ConfigError } from "../errors.js";

/** A zod failure as the ConfigError of its first issue, naming the field, the expectation and the value. */
export function zodToConfigError(error: z.ZodError, raw: unknown, prefix: string): ConfigError {
  const all = error.issues.map((issue) => issueToConfigError(issue, raw, prefix));
  const first = all[0]!;
  if (all.length === 1) return first;
  const combined = new ConfigError(first.field, "", undefined, { cause: error });
  combined.message = `${all.length} problems: ${all.map((problem) => problem.message).join("; ")}`;
  combined.problems = all.map((problem) => ({ field: problem.field, message: problem.message }));
  return combined;
}

function issueToConfigError(issue: z.core.$ZodIssue, raw: unknown, prefix: string): ConfigError {
  const path = issue.path
    .map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`))
    .join("");
  let received: unknown = raw;
  for (const part of issue.path) {
    received =
      received && typeof received === "object" ? (received as Record<PropertyKey, unknown>)[part] : undefined;
  }
  return new ConfigError(`${prefix}${path}`, expectation(issue), received);
}

/** What the field should have been, in words, from a zod issue. */
export function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "custom":
      return issue.message.replace(/^expected /, "");
    case "unrecognized_keys":
      return `no unknown keys (got ${issue.keys.join(", ")})`;
    case "invalid_type":
      return issue.expected === "int"
        ? "an integer"
        : /^[aeiou]/.test(issue.expected)
          ? `an ${issue.expected}`
          : `a ${issue.expected}`;
    case "too_small":
      return `${issue.origin === "array" ? "an array with" : "a value"} ${issue.inclusive === false ? ">" : ">="} ${String(issue.minimum)}${issue.origin === "number" ? "" : ` (${issue.origin})`}`;
    case "too_big":
      return `${issue.origin === "array" ? "an array with" : "a value"} ${issue.inclusive === false ? "<" : "<="} ${String(issue.maximum)}${issue.origin === "number" ? "" : ` (${issue.origin})`}`;
    case "invalid_union":
      // Which alternatives were open, rather than zod's bare "Invalid input".
      return `one of: ${issue.errors.map((branch) => (branch[0] ? expectation(branch[0]) : "?")).join("; or ")}`;
    case "invalid_value":
      return `one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`;
    default:
      return issue.message
        .replace(/^Invalid input: /, "")
        .replace(/^expected /, "")
        .replace(/, received .*$/, "");
  }
}
