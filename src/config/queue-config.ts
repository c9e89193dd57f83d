import { z } from "zod";
import { DROP_POLICIES, parseQueueMode, type QueueMode } from "../policy/queue-mode.js";
import { nonNegativeInt } from "./non-negative-int.js";

const modeSchema = z.string().transform((value, ctx): QueueMode => {
  const mode = parseQueueMode(value);
  if (!mode) {
    ctx.addIssue({
      code: "custom",
      message: `expected one of steer, followup, collect, interrupt, reject, rollback (or an alias)`,
    });
    return z.NEVER;
  }
  return mode;
});

/** The schema of `queue`: how messages that arrive while a turn runs are routed. Every key documented with its `@default` (docs/config.md). */
export const queueSchema = z
  .object({
    /**
     * How a message that arrives while a turn runs is handled: `steer`, `followup`, `collect`,
     * `interrupt`, `rollback` (an interrupt whose cut-off turn later model calls never see) or
     * `reject` (a busy session refuses it), or an alias. Resolved inline → session (`/queue`) →
     * channel → this → default.
     * @default "steer"
     */
    mode: modeSchema.optional(),
    /**
     * The queue mode per channel name, between a session's `/queue` setting and `queue.mode`.
     * @default {}
     */
    byChannel: z.record(z.string(), modeSchema).default({}),
    /**
     * The quiet window of `collect` mode: a burst becomes one turn this long after its last message.
     * At most 600000 (as `/queue` refuses too: a longer window would park a session's messages).
     * @default 500
     */
    debounceMs: nonNegativeInt.max(600_000).optional(),
    /**
     * Messages a session's queue holds before the drop policy applies.
     * @default 20
     */
    cap: z.number().int().positive().optional(),
    /**
     * What the cap drops: `old` (the oldest), `new` (the newcomer), `summarize` (the oldest, leaving
     * a one-line summary for the next turn).
     * @default "summarize"
     */
    drop: z.enum(DROP_POLICIES).optional(),
    /**
     * Let another sender's message join a running turn (its authority then narrows).
     * @default false
     */
    steerAcrossSenders: z.boolean().optional(),
    /** Bounds of `collect` mode. */
    collect: z
      .object({
        /**
         * A burst is handed over at most this long after its first message, however long messages
         * keep coming (the quiet window alone would wait for the user to stop). It does not cut a
         * running turn short: a burst that began during a turn runs when that turn ends.
         * @default none (only the quiet window)
         */
        maxWaitMs: z.number().int().positive().max(3_600_000).optional(),
      })
      .strict()
      .optional(),
    /**
     * How many steering messages held back for a running turn one model call gets: `all` of them,
     * or `one-at-a-time` (the oldest; the next call gets the next, and the tool batch is skipped
     * only while one is held).
     * @default "all"
     */
    steering: z.enum(["all", "one-at-a-time"]).default("all"),
  })
  .strict()
  .default({ byChannel: {}, steering: "all" });
