import type { IncomingMessage } from "node:http";
import { HttpError } from "./http-error.js";

/** Past the limit, this much more is read (and dropped) so the client can read the 413; then it is cut. */
const DISCARD_MAX = 8 * 1024 * 1024;

/**
 * Reads a JSON request body of at most `limit` bytes: 415 unless the content type is JSON, 413 when
 * the body (declared or received) passes the limit, 400 for bytes that are not UTF-8 or not JSON.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new HttpError(
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      `expected content-type application/json, received ${type ? JSON.stringify(type) : "none"}`,
      "content-type",
    );
  }
  const bytes = await readLimited(req, limit);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    // Decoding would turn the bad bytes into U+FFFD and store a text the client never sent.
    throw new HttpError(400, "INVALID_JSON", "body: not valid UTF-8", "body");
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(400, "INVALID_JSON", `body: not JSON (${(error as Error).message})`, "body");
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function readLimited(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number(req.headers["content-length"] ?? 0) > limit;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      if (!over) chunks.push(chunk);
      else if (size > limit + DISCARD_MAX) {
        reject(tooLarge(limit, true));
        req.removeAllListeners("data");
        req.pause();
      }
    });
    req.on("end", () => (over ? reject(tooLarge(limit, false)) : resolve(Buffer.concat(chunks))));
    req.on("error", reject);
  });
}

function tooLarge(limit: number, cut: boolean): HttpError {
  return new HttpError(
    413,
    "BODY_TOO_LARGE",
    `body: over the limit of ${limit} bytes`,
    "body",
    cut ? { connection: "close" } : {},
  );
}
