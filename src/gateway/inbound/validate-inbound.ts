import type { GatewayConfig } from "../../config.js";
import { MessageRejectedError } from "../../errors.js";
import { type Sender, validateSender } from "../../policy/sender.js";
import { hasLoneSurrogate } from "../../ports/session-key.js";
import type { SeenIds } from "../sessions/seen-ids.js";

/** Checks on an inbound message at the edge, before anything is accepted. */
export interface InboundMessage {
  session: string;
  channel: string;
  text: string;
  id: string;
  /** Inline queue mode for this message (or an alias). */
  mode?: string;
  /** Who wrote it; absent: the session's single anonymous user. */
  sender?: Sender;
  /**
   * The platform id the answer should reply to (usually the platform's own id of this message); kept on
   * the user record and handed back as `OutboundMessage.replyTo`, so a channel can thread its answer.
   */
  replyTo?: string;
  /** The platform thread this message is in; handed back as `OutboundMessage.thread`. */
  thread?: string;
  /**
   * The id of an earlier message of this session that this one replaces (an edited message): a queued
   * one is replaced, one in the running turn gets this as a correction, one already answered is
   * answered again as a new turn. An edit may reuse the id it edits (as platforms do).
   */
  editOf?: string;
}

// Control characters in a session key or message id are refused (they corrupt logs and file names).
function hasControlChars(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/**
 * Refuses a malformed message before anything is accepted: `channels` are the gateway's channel names,
 * so a message never arrives on a channel its replies could not go out on.
 */
export function validateInbound(
  inbound: InboundMessage,
  config: GatewayConfig,
  channels: readonly string[],
): InboundMessage {
  if (inbound === null || typeof inbound !== "object") {
    throw new MessageRejectedError("message", `expected an object, received ${typeof inbound}`);
  }
  const { session, channel, text, id } = inbound;
  validateSessionKey(session, config);
  if (typeof channel !== "string" || !channels.includes(channel))
    throw new MessageRejectedError(
      "channel",
      `expected one of the gateway's channels (${channels.join(", ")})`,
    );
  if (typeof text !== "string") throw new MessageRejectedError("text", "expected a string");
  if (
    typeof id !== "string" ||
    id.length === 0 ||
    id.length > 256 ||
    hasControlChars(id) ||
    hasLoneSurrogate(id)
  ) {
    throw new MessageRejectedError(
      "id",
      "expected a non-empty string of at most 256 characters of well-formed Unicode, without control characters",
    );
  }
  for (const field of ["replyTo", "thread"] as const) {
    const value = inbound[field];
    if (
      value !== undefined &&
      (typeof value !== "string" ||
        value.length === 0 ||
        value.length > 256 ||
        hasControlChars(value) ||
        hasLoneSurrogate(value))
    )
      throw new MessageRejectedError(
        field,
        "expected a non-empty string of at most 256 characters of well-formed Unicode, without control characters",
      );
  }
  const { editOf } = inbound;
  if (editOf !== undefined && (typeof editOf !== "string" || editOf.length === 0 || editOf.length > 256))
    throw new MessageRejectedError("editOf", "expected the id of an earlier message: a non-empty string");
  const sender = validateSender(inbound.sender);
  return sender ? { ...inbound, sender } : inbound;
}

/**
 * Refuses a session key `receive()` would refuse (empty, too long, control characters, lone
 * surrogates), so every edge (an HTTP path, a CLI argument) checks keys the same way.
 *
 * @throws MessageRejectedError naming `field` (default `session`), code `SESSION_KEY_INVALID`.
 */
export function validateSessionKey(session: unknown, config: GatewayConfig, field = "session"): string {
  if (typeof session !== "string" || session.length === 0) {
    throw new MessageRejectedError(field, "expected a non-empty string", "SESSION_KEY_INVALID");
  }
  if (
    session.length > config.limits.maxSessionKeyChars ||
    hasControlChars(session) ||
    hasLoneSurrogate(session)
  ) {
    throw new MessageRejectedError(
      field,
      `expected at most ${config.limits.maxSessionKeyChars} characters of well-formed Unicode and no control characters`,
      "SESSION_KEY_INVALID",
    );
  }
  return session;
}

export function pruneSeen(entry: { seen: SeenIds }, now: number, windowMs: number): void {
  // Ids arrive in time order, so the oldest are first.
  entry.seen.prune(now, windowMs);
}

export function stateName(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    const [key, inner] = Object.entries(value)[0] ?? ["", ""];
    return `${key}.${stateName(inner)}`;
  }
  return String(value);
}
