import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/**
 * Whether a request carries `Authorization: Bearer <token>`. Both sides are hashed first, so the
 * comparison takes the same time whatever the length or content of what was sent.
 */
export function hasBearer(req: IncomingMessage, token: string): boolean {
  const header = req.headers.authorization ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const sent = createHash("sha256")
    .update(match?.[1]?.trim() ?? "")
    .digest();
  const expected = createHash("sha256").update(token).digest();
  return timingSafeEqual(sent, expected) && match !== null;
}
