import { z } from "zod";

/** The schema of `model`: what every model call is given, whichever provider answers it. Every key documented with its `@default` (docs/config.md). */
export const modelSchema = z
  .object({
    /**
     * The system prompt: sent first in every model call, as the provider's own system prompt. It is
     * not part of the transcript, so no window limit or rotation ever drops it.
     * @default none
     */
    instructions: z.string().max(200_000).optional(),
    /**
     * Sampling temperature (0 to 2); a provider with a narrower range is given what it accepts.
     * @default the provider's
     */
    temperature: z.number().min(0).max(2).optional(),
    /**
     * The longest reply one model call may produce, in tokens.
     * @default the provider's
     */
    maxOutputTokens: z.number().int().positive().optional(),
    /**
     * How long a model call may wait for the provider to start answering, and the longest silence
     * inside its stream; past it the call fails with `MODEL_TIMEOUT` (retried while nothing arrived).
     * The whole call stays bounded by `limits.modelTimeoutMs`.
     * @default the provider's (120000 for the built-in ones)
     */
    timeoutMs: z.number().int().positive().max(3_600_000).optional(),
  })
  .strict()
  .default({});
