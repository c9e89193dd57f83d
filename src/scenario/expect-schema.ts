import { z } from "zod";

/**
 * A scenario's `expect` block: what the run must show. Every list is optional; `states`, `deliveries`
 * and `events` are matched in order (other items may come between), `acks` by message id.
 */
export const expectSchema = z
  .object({
    states: z
      .array(
        z
          .object({
            /** Which machine: a session actor, one turn's run actor, or a commitment's actors. */
            machine: z.enum(["run", "session", "commitment"]),
            /** For `commitment`: its id. Each review of it is an actor of its own, from `scheduled`. */
            commitment: z.string().min(1).optional(),
            /** The session key; optional when the scenario has one session. */
            session: z.string().min(1).optional(),
            /** For `run`: the session's nth turn (1-based). */
            turn: z.number().int().positive().default(1),
            /** State values (`toolBatch.toolRunning.working`) it must pass through, in order. */
            values: z.array(z.string().min(1)).min(1),
          })
          .strict(),
      )
      .optional(),
    acks: z
      .array(z.object({ messageId: z.string().min(1), disposition: z.string().min(1) }).strict())
      .optional(),
    deliveries: z
      .array(
        z
          .object({
            kind: z.enum(["reply", "ack", "recovery", "notice", "commitment"]).optional(),
            session: z.string().min(1).optional(),
            text: z.string().optional(),
            /** A regular expression (checked for safety like complaint patterns), case-insensitive. */
            textMatches: z.string().optional(),
          })
          .strict(),
      )
      .optional(),
    /** Exactly this many deliveries (of `kind` when given); e.g. `{ count: 1, kind: reply }`. */
    deliveryCount: z
      .object({
        count: z.number().int().nonnegative(),
        kind: z.enum(["reply", "ack", "recovery", "notice", "commitment"]).optional(),
      })
      .strict()
      .optional(),
    events: z
      .array(
        z
          .object({
            type: z.string().min(1),
            reason: z.string().optional(),
            /** Fields the event must carry with these values (`{ id: c1, classification: completed }`). */
            fields: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
          })
          .strict(),
      )
      .optional(),
    /** Commitments as they end: each listed id with this status (and classification, when given). */
    commitments: z
      .array(
        z
          .object({
            id: z.string().min(1),
            status: z.enum(["pending", "sent", "dismissed", "expired"]),
            classification: z.string().optional(),
          })
          .strict(),
      )
      .optional(),
    noEvents: z.array(z.string().min(1)).optional(),
  })
  .strict()
  .superRefine((expect, context) => {
    for (const [index, spec] of (expect.states ?? []).entries()) {
      if ((spec.machine === "commitment") !== (spec.commitment !== undefined))
        context.addIssue({
          code: "custom",
          path: ["states", index, "commitment"],
          message:
            spec.machine === "commitment"
              ? "a commitment id is needed with machine: commitment"
              : "only with machine: commitment",
        });
    }
  });

/** A scenario's `expect` block: what the run must show, checked after it ends. */
export type ScenarioExpect = z.output<typeof expectSchema>;
