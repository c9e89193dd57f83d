import { z } from "zod";
import { nonNegativeInt } from "./non-negative-int.js";

/** The schema of `limits`: bounds that keep one user or one adapter from holding the gateway. Every key documented with its `@default` (docs/config.md). */
export const limitsSchema = z
  .object({
    /**
     * The longest inbound text accepted; a longer one is rejected (`MESSAGE_REJECTED`).
     * @default 32000
     */
    maxMessageChars: z.number().int().positive().default(32_000),
    /**
     * The longest session key accepted (`SESSION_KEY_INVALID` past it).
     * @default 512
     */
    maxSessionKeyChars: z.number().int().positive().default(512),
    /**
     * How long a message id is remembered, so a redelivery is acked `duplicate`.
     * @default 600000
     */
    dedupeWindowMs: z.number().int().positive().default(600_000),
    /**
     * Model calls one turn may make; a model that keeps asking for tools fails the turn
     * (`MODEL_CALL_LIMIT`).
     * @default 25
     */
    maxModelCallsPerTurn: z.number().int().positive().default(25),
    /**
     * A turn that would start with a longer context window first rotates the transcript.
     * @default 2000
     */
    maxWindowRecords: z.number().int().positive().default(2000),
    /**
     * Idle sessions whose actor (and cached context window) stays alive, most recent first: their
     * next message starts a turn without rebuilding them. Older idle sessions keep only a few
     * hundred bytes and are rebuilt on demand. 0 stops every actor as soon as it is idle.
     * @default 1000
     */
    liveIdleSessions: nonNegativeInt.default(1000),
    /**
     * Messages `explain()` can answer for, across sessions: past this, the sessions whose messages
     * were least recently touched are forgotten first (each session keeps its last 500).
     * @default 20000
     */
    explainMessages: nonNegativeInt.default(20_000),
    /**
     * A tool call that has not settled by then is given up: a cancellable tool is cancelled, any
     * other may still be running, and the model is told its outcome is unknown.
     * @default 600000
     */
    toolTimeoutMs: z.number().int().positive().default(600_000),
    /**
     * A model call that has not answered by then is aborted and fails its turn (`MODEL_TIMEOUT`).
     * @default 600000
     */
    modelTimeoutMs: z.number().int().positive().default(600_000),
  })
  .strict()
  .default({
    maxMessageChars: 32_000,
    maxSessionKeyChars: 512,
    dedupeWindowMs: 600_000,
    maxModelCallsPerTurn: 25,
    maxWindowRecords: 2000,
    liveIdleSessions: 1000,
    explainMessages: 20_000,
    toolTimeoutMs: 600_000,
    modelTimeoutMs: 600_000,
  });
