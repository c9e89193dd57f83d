/**
 * Delivery rules of docs/architecture.md as pure functions.
 *
 * @example
 * ```ts
 * isSubstantive("Short.");            // false
 * markerDeliveryMode("message_tool"); // "message_tool_only"
 * ```
 */
export type VisibleReplies = "auto" | "message_tool";
export type DeliveryMode = "message_tool_only" | "automatic";

export function markerDeliveryMode(visibleReplies: VisibleReplies): DeliveryMode {
  return visibleReplies === "message_tool" ? "message_tool_only" : "automatic";
}

/** A final worth a recovery turn: ≥ 280 characters, or ≥ 120 with two sentences or more. */
export function isSubstantive(text: string): boolean {
  const trimmed = text.trim();
  if (trimmed.length >= 280) return true;
  if (trimmed.length < 120) return false;
  const sentences = trimmed.split(/[.!?]+(?:\s|$)/).filter((part) => part.trim().length > 0);
  return sentences.length >= 2;
}

/** The built-in tool that sends a visible message; in `message_tool` mode a turn is delivered through it. */
export const MESSAGE_TOOL = "message";
/**
 * Whether a final that did not reach the user gets its one recovery: in `auto` mode always (the channel
 * failed; a short reply must not end in silence), in `message_tool` mode only when it is substantive.
 */
export function wantsRecovery(text: string, visibleReplies: VisibleReplies): boolean {
  return visibleReplies === "auto" ? text.trim().length > 0 : isSubstantive(text);
}

export const COULD_NOT_DELIVER_NOTICE =
  "I wrote a reply but could not deliver it. Please ask again if you still need it.";

/** A turn failed (the model, a store write): the user is told, never left waiting. */
export const FAILED_NOTICE = "I could not finish this reply because of an internal error. Please try again.";

/** What the user is told when the model itself failed the turn, by the provider's error code. */
const MODEL_NOTICES: Record<string, string> = {
  MODEL_UNAVAILABLE:
    "I could not reach the language model, so I could not answer. Please try again in a little while.",
  MODEL_RATE_LIMITED:
    "The language model is refusing requests for now (rate limit), so I could not answer. Please try again in a little while.",
  MODEL_AUTH:
    "The language model refused this gateway's credentials, so I could not answer. The operator needs to check the model's API key.",
  MODEL_BAD_REQUEST:
    "The language model refused this request, so I could not answer. Please try again; if it keeps happening, the operator should check the model settings.",
  MODEL_STREAM_INTERRUPTED:
    "My reply broke off while it was being written, so I stopped there. Please ask again.",
};

/**
 * The one notice a failed turn sends: what went wrong in words the user can act on when the model
 * failed, else {@link FAILED_NOTICE}.
 *
 * @example
 * ```ts
 * failedNotice({ code: "MODEL_UNAVAILABLE" }); // "I could not reach the language model, ..."
 * failedNotice(null);                          // FAILED_NOTICE
 * ```
 */
export function failedNotice(error: { code: string } | null | undefined): string {
  return (error && MODEL_NOTICES[error.code]) || FAILED_NOTICE;
}

/** A turn ran past the lane timeout and was stopped. */
export const TIMED_OUT_NOTICE =
  "I could not finish this reply in time and stopped working on it. Please try again.";

/** Which acks a channel shows as messages (`delivery.visibleAcks`, resolved for one channel). */
export type AckVisibility = "problems" | "all" | "none";

/**
 * `delivery.visibleAcks` for one channel: a per-channel entry, else the one value; the `web` channel's
 * page shows every ack already, so it sends acks as messages only when asked by name or with `all`.
 *
 * @example
 * ```ts
 * ackVisibilityFor("problems", "telegram"); // "problems"
 * ackVisibilityFor("problems", "web");      // "none"
 * ```
 */
export function ackVisibilityFor(
  setting: AckVisibility | Readonly<Record<string, AckVisibility>>,
  channel: string,
): AckVisibility {
  if (typeof setting === "string") return channel === "web" && setting !== "all" ? "none" : setting;
  return setting[channel] ?? (channel === "web" ? "none" : "problems");
}

/**
 * Whether an ack is a problem a person must see: its message will never be answered (rejected, dropped),
 * it reports messages dropped to make room, or it answers a control command.
 */
export function isProblemAck(ack: { disposition: string; dropped?: readonly string[] }): boolean {
  return (
    ack.disposition === "rejected" ||
    ack.disposition === "dropped" ||
    ack.disposition === "control" ||
    (ack.dropped?.length ?? 0) > 0
  );
}

/** Told when a reply may or may not have reached the user and was not resent, so nobody waits on it. */
export const UNCERTAIN_DELIVERY_NOTICE =
  "The chat service did not confirm my last reply. If you do not see it above, please ask again.";
