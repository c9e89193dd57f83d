import { z } from "zod";
import { nonNegativeInt } from "./non-negative-int.js";

/** The schema of `commitments`: inferred follow-ups (scheduling and review). Every key documented with its `@default` (docs/config.md). */
export const commitmentsSchema = z
  .object({
    /**
     * Schedule and review inferred follow-ups.
     * @default false
     */
    enabled: z.boolean().default(false),
    /**
     * Follow-ups sent per session per rolling 24 hours.
     * @default 3
     */
    maxPerDay: nonNegativeInt.default(3),
    // Optional, with their defaults applied by the gateway's commitments (docs/commitments.md).
    /**
     * Reviews started per heartbeat tick.
     * @default 3
     */
    maxPerTick: z.number().int().positive().max(1000).optional(),
    /**
     * A pending commitment expires this long after its latest time.
     * @default 259200000 (72 h)
     */
    expireAfterMs: z.number().int().positive().optional(),
    /**
     * A review that has not decided by then counts as unclear.
     * @default 120000
     */
    reviewTimeoutMs: z.number().int().positive().optional(),
    /**
     * Model calls one review may make (read-only tools in between).
     * @default 4
     */
    maxReviewCalls: z.number().int().positive().max(20).optional(),
  })
  .strict()
  .default({ enabled: false, maxPerDay: 3 });
