import { z } from "zod";
import type { LoopbackChannel, LoopbackOptions } from "../adapters/channels/loopback-channel.js";

/**
 * A scenario's `channels.<name>`: a loopback channel, its faults, and the optional capabilities a real
 * platform has (`maxLength`, `edit`, `typing`, `react`, `reconcile`), so a scenario can play a
 * Telegram-like or Slack-like channel: long answers split, previews edited, typing shown, acks as
 * reactions, unknown sends looked up.
 */
export const channelSchema = z
  .object({
    failSends: z.number().int().nonnegative().default(0),
    omitMessageId: z.boolean().default(false),
    /** Each send takes this long on the simulated clock (a reply can be "on its way" for a while). */
    sendDelayMs: z.number().nonnegative().optional(),
    /** These sends fail (1-based, counting every send the channel is asked for), e.g. `[3]`. */
    failSendNumbers: z.array(z.number().int().positive()).optional(),
    /** The longest text one message carries: longer answers are split into parts. */
    maxLength: z.number().int().positive().optional(),
    /** The channel can edit what it sent (streaming previews, `delivery.streaming`). */
    edit: z.boolean().optional(),
    /** The channel shows a typing indicator while a turn runs. */
    typing: z.boolean().optional(),
    /** The channel puts reactions on messages (`delivery.ackReactions`). */
    react: z.boolean().optional(),
    /** The channel can say whether a send of unknown outcome arrived (it knows its deliveryIds). */
    reconcile: z.boolean().optional(),
  })
  .strict();

export type ChannelSpec = z.output<typeof channelSchema>;

/** The loopback channel's options for a spec (absent: a plain channel), and its `failSendNumbers`. */
export function loopbackSettings(spec: ChannelSpec | undefined): {
  options: Omit<LoopbackOptions, "now" | "clock">;
  failSendNumbers: number[];
} {
  if (!spec) return { options: { failSends: 0, omitMessageId: false }, failSendNumbers: [] };
  const { failSendNumbers, maxLength, edit, typing, react, reconcile, ...faults } = spec;
  return {
    options: {
      ...faults,
      ...(maxLength !== undefined ? { maxLength } : {}),
      capabilities: {
        edit: edit === true,
        typing: typing === true,
        react: react === true,
        reconcile: reconcile === true,
      },
    },
    failSendNumbers: failSendNumbers ?? [],
  };
}

/** What a channel with capabilities did besides sending: edits, typing indicators, reactions. */
export interface ChannelActivity {
  edits: Array<{ at: number; session: string; messageId: string; text: string }>;
  typings: Array<{ at: number; session: string }>;
  reactions: Array<{ at: number; session: string; messageId: string; reaction: string }>;
}

/** The activity of each channel that did anything besides sending (the output's `channelActivity`). */
export function collectChannelActivity(
  channels: ReadonlyMap<string, LoopbackChannel>,
): Record<string, ChannelActivity> {
  const out: Record<string, ChannelActivity> = {};
  for (const [name, channel] of channels) {
    if (channel.edits.length + channel.typings.length + channel.reactions.length === 0) continue;
    out[name] = {
      edits: [...channel.edits],
      typings: [...channel.typings],
      reactions: [...channel.reactions],
    };
  }
  return out;
}

/** The output's `channelActivity`, when a channel did anything besides sending (else nothing). */
export function activityOf(channels: ReadonlyMap<string, LoopbackChannel>): {
  channelActivity?: Record<string, ChannelActivity>;
} {
  const channelActivity = collectChannelActivity(channels);
  return Object.keys(channelActivity).length > 0 ? { channelActivity } : {};
}
