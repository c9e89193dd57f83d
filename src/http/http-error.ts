import type { ServerResponse } from "node:http";

/**
 * A request the server refuses, with the body every 4xx/5xx carries:
 * `{ "error": { "code", "message", "field"? } }`.
 *
 * @example
 * ```ts
 * throw new HttpError(400, "INVALID_INPUT", "text: expected a string", "text");
 * ```
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** Writes a JSON body with its length; a HEAD-less JSON API needs nothing more. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: HttpError): void {
  const body = {
    error: {
      code: error.code,
      message: error.message,
      ...(error.field !== undefined ? { field: error.field } : {}),
    },
  };
  sendJson(res, error.status, body, error.headers);
}
