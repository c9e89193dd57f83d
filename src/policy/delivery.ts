/**
 * Delivery rules of DESIGN.md §4 as pure functions.
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

/** A turn ran past the lane timeout and was stopped. */
export const TIMED_OUT_NOTICE =
  "I could not finish this reply in time and stopped working on it. Please try again.";
