import type { GatewayConfig } from "./config.js";
import { MessageRejectedError } from "./errors.js";

/** Checks on an inbound message at the edge, before anything is accepted. */
export interface InboundMessage {
  session: string;
  channel: string;
  text: string;
  id: string;
  /** Inline queue mode for this message (or an alias). */
  mode?: string;
}

// Control characters in a session key are refused (they corrupt logs and file names).
function hasControlChars(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

export function validateInbound(inbound: InboundMessage, config: GatewayConfig): InboundMessage {
  if (inbound === null || typeof inbound !== "object") {
    throw new MessageRejectedError("message", `expected an object, received ${typeof inbound}`);
  }
  const { session, channel, text, id } = inbound;
  if (typeof session !== "string" || session.length === 0) {
    throw new MessageRejectedError("session", "expected a non-empty string", "SESSION_KEY_INVALID");
  }
  if (session.length > config.limits.maxSessionKeyChars || hasControlChars(session)) {
    throw new MessageRejectedError(
      "session",
      `expected at most ${config.limits.maxSessionKeyChars} characters and no control characters`,
      "SESSION_KEY_INVALID",
    );
  }
  if (typeof channel !== "string" || channel.length === 0)
    throw new MessageRejectedError("channel", "expected a channel name");
  if (typeof text !== "string") throw new MessageRejectedError("text", "expected a string");
  if (typeof id !== "string" || id.length === 0 || id.length > 256) {
    throw new MessageRejectedError("id", "expected a non-empty string of at most 256 characters");
  }
  return inbound;
}

export function pruneSeen(entry: { seen: Map<string, number> }, now: number, windowMs: number): void {
  // Ids arrive in time order, so the oldest are first.
  for (const [id, at] of entry.seen) {
    if (now - at <= windowMs) break;
    entry.seen.delete(id);
  }
}

export function stateName(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    const [key, inner] = Object.entries(value)[0] ?? ["", ""];
    return `${key}.${stateName(inner)}`;
  }
  return String(value);
}
