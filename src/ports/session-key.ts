import * as crypto from "node:crypto";
import { MessageRejectedError } from "../errors.js";

/** Longest readable prefix kept in a file name; the hash alone guarantees uniqueness. */
const PREFIX_MAX = 40;
/** 32 hex chars = 128 bits of sha256: collisions are out of reach for any realistic key count. */
const HASH_CHARS = 32;

// One-shot crypto.hash() (Node ≥ 20.12) is several times faster than createHash() for short inputs.
const sha256Hex: (text: string) => string =
  typeof crypto.hash === "function"
    ? (text) => crypto.hash("sha256", text, "hex")
    : (text) => crypto.createHash("sha256").update(text, "utf8").digest("hex");

/**
 * Rejects a session key no store can hold: not a string, empty, or not well-formed Unicode (a lone
 * surrogate has no UTF-8 encoding, so two different keys would hash to the same bytes).
 *
 * @throws MessageRejectedError with code `SESSION_KEY_INVALID`.
 * @example
 * ```ts
 * assertSessionKey("telegram:42"); // ok
 * assertSessionKey(""); // throws SESSION_KEY_INVALID
 * ```
 */
/** A string UTF-8 cannot hold as it is (a lone surrogate): it would not survive a write and a read. */
export function hasLoneSurrogate(value: string): boolean {
  return /\p{Cs}/u.test(value);
}

export function assertSessionKey(key: unknown): asserts key is string {
  if (typeof key !== "string") {
    throw new MessageRejectedError(
      "session",
      `expected a string key, received ${typeof key}`,
      "SESSION_KEY_INVALID",
    );
  }
  if (key.length === 0) {
    throw new MessageRejectedError(
      "session",
      "expected a non-empty key, received an empty string",
      "SESSION_KEY_INVALID",
    );
  }
  if (hasLoneSurrogate(key)) {
    throw new MessageRejectedError(
      "session",
      "expected well-formed Unicode, received a key with a lone surrogate",
      "SESSION_KEY_INVALID",
    );
  }
}

/**
 * The file-system-safe base name of a session key: a lowercase `[a-z0-9_-]` prefix for humans, then the
 * sha256 of the key's exact UTF-8 bytes, so `Telegram:1` / `telegram:1` and NFC / NFD spellings get
 * different names. The result never contains a separator, a dot, or a reserved device name on its own,
 * so it cannot escape or alias the store directory.
 *
 * @example
 * ```ts
 * sessionFileName("Telegram:42"); // "telegram_42-5c1f…" (prefix, "-", 32 hex chars)
 * ```
 */
export function sessionFileName(key: string): string {
  const digest = sha256Hex(key).slice(0, HASH_CHARS);
  const prefix = key
    .slice(0, PREFIX_MAX * 2) // the prefix is only a hint: no need to lowercase a huge key
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "_")
    .slice(0, PREFIX_MAX)
    // A leading "-" reads as a command-line flag; "_" runs are noise.
    .replace(/^[-_]+/, "")
    .replace(/[-_]+$/, "");
  return `${prefix || "s"}-${digest}`;
}
