import { z } from "zod";
import type { StaleDetector } from "../policy/stale-detector.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "../policy/stale-reply.js";
import { nonNegativeInt } from "./non-negative-int.js";

/** The schema of `staleReplyRecheck`: the finalize-time check that a draft answers the newest user message. Every key documented with its `@default` (docs/config.md). */
export const staleReplyRecheckSchema = z
  .object({
    /**
     * Re-check a final draft against the newest user message before it is delivered.
     * @default true
     */
    enabled: z.boolean().default(true),
    /**
     * Re-drafts one turn may make; the count resets only with a new turn.
     * @default 1
     */
    maxPasses: nonNegativeInt.default(1),
    /**
     * Regular expressions (case-insensitive) of complaints such as "you didn't answer my question";
     * each is checked for catastrophic backtracking when the config loads.
     * @default the 8 built-in patterns (`DEFAULT_COMPLAINT_PATTERNS`)
     */
    complaintPatterns: z
      .array(z.string().max(500))
      .max(100)
      .default([...DEFAULT_COMPLAINT_PATTERNS]),
    /**
     * The share of content tokens a draft must have in common with the newest user message before
     * the `low-overlap` signal can fire (0 to 1).
     * @default 0.2
     */
    minOverlap: z.number().min(0).max(1).default(0.2),
    /**
     * The gateway author's own detector (a function: only from code, never from a config file);
     * the built-in signals decide when it is absent, throws, times out or returns no verdict.
     * @default undefined (the built-in signals)
     */
    detect: z
      .custom<StaleDetector>((value) => typeof value === "function", {
        message: "a function (facts, { signal }) => verdict",
      })
      .optional(),
    /**
     * How long a re-check waits for `detect`, on the gateway's clock.
     * @default 5000
     */
    detectTimeoutMs: z.number().int().positive().max(600_000).default(5000),
  })
  .strict()
  .default({
    enabled: true,
    maxPasses: 1,
    complaintPatterns: [...DEFAULT_COMPLAINT_PATTERNS],
    minOverlap: 0.2,
    detectTimeoutMs: 5000,
  });
