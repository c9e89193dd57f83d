import { z } from "zod";
import { nonNegativeInt } from "./non-negative-int.js";

/** `delivery.visibleAcks` for one channel; the booleans of earlier versions are aliases. */
const ackVisibilityName = z.enum(["problems", "all", "none"]);
const ackAlias = (value: boolean | "problems" | "all" | "none") =>
  value === true ? "all" : value === false ? "none" : value;

/** The schema of `delivery`: how finals reach the user. Every key documented with its `@default` (docs/config.md). */
export const deliverySchema = z
  .object({
    /**
     * `auto`: the gateway sends each final; `message_tool`: a final is private unless the model
     * sent it with the built-in `message` tool.
     * @default "auto"
     */
    visibleReplies: z.enum(["auto", "message_tool"]).default("auto"),
    /**
     * Which acks are sent as visible messages on channels other than `web` (whose page shows every
     * ack): `problems` sends each ack of a message that will never be answered (rejected, dropped by
     * `/stop`, a cap or `/new`) and each control command's ack; `all` every ack; `none` no ack.
     * One value for every channel, or one per channel name (channels not named take `problems`).
     * `true` and `false` are accepted for `all` and `none`.
     * @default "problems"
     */
    visibleAcks: z
      .union([
        ackVisibilityName,
        z.boolean(),
        z.record(z.string(), z.union([ackVisibilityName, z.boolean()])),
      ])
      .transform((value) =>
        typeof value === "object"
          ? Object.fromEntries(Object.entries(value).map(([name, each]) => [name, ackAlias(each)]))
          : ackAlias(value),
      )
      .default("problems"),
    /**
     * When a channel send has not answered by then, its abort signal fires and Tiller waits for it
     * to settle: a receipt that comes later still counts as delivered, never followed by a resend.
     * @default 30000
     */
    sendTimeoutMs: z.number().int().positive().default(30_000),
    /**
     * How long after the abort a send is still waited for. A channel that has not settled by then
     * has an unknown outcome: it is resent only if the channel's `reconcile` says it was not
     * delivered.
     * @default 60000
     */
    sendAbortGraceMs: nonNegativeInt.default(60_000),
    /**
     * Streaming previews on channels that can edit: `edit` sends the first streamed text once and
     * edits it as the model streams, at most every `minIntervalMs`; the final replaces it. `off`
     * sends only the final.
     */
    streaming: z
      .object({
        /**
         * `edit`: previews edited as the model streams (channels with `edit`); `off`: the final only.
         * @default "off"
         */
        mode: z.enum(["off", "edit"]).default("off"),
        /**
         * The shortest time between two edits of a preview.
         * @default 1000
         */
        minIntervalMs: nonNegativeInt.default(1000),
      })
      .strict()
      .default({ mode: "off", minIntervalMs: 1000 }),
    /**
     * Put a reaction on each inbound message for its ack (on channels that can react), instead of
     * sending acks of messages that will be answered as messages.
     * @default false
     */
    ackReactions: z.boolean().default(false),
  })
  .strict()
  .default({
    visibleReplies: "auto",
    visibleAcks: "problems",
    sendTimeoutMs: 30_000,
    sendAbortGraceMs: 60_000,
    streaming: { mode: "off", minIntervalMs: 1000 },
    ackReactions: false,
  });
