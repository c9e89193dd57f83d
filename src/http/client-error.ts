import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** What each refusal of Node's HTTP parser answers, by the parser's error code. */
const REFUSALS: Record<string, { status: number; code: string; field: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: "HEADERS_TOO_LARGE", field: "headers" },
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: 400, code: "BAD_REQUEST", field: "content-length" },
  HPE_INVALID_CONTENT_LENGTH: { status: 400, code: "BAD_REQUEST", field: "content-length" },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, code: "BAD_REQUEST", field: "transfer-encoding" },
  HPE_INVALID_CHUNK_SIZE: { status: 400, code: "BAD_REQUEST", field: "transfer-encoding" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: "REQUEST_TIMEOUT", field: "request" },
};

const REASONS: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
};

/**
 * The server's `clientError` listener: a request Node's parser refuses (duplicate `Content-Length`,
 * `Content-Length` with `Transfer-Encoding`, a bare LF, headers past the limit) or one cut by the
 * request timeout gets the API's JSON error body on a raw response, then the connection closes
 * (after a framing error nothing more on it can be trusted).
 */
export function answerClientError(error: Error & { code?: string; reason?: string }, socket: Socket): void {
  const response = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  if (error.code === "ECONNRESET" || !socket.writable || response?.headersSent) {
    socket.destroy();
    return;
  }
  const refusal = REFUSALS[error.code ?? ""] ?? { status: 400, code: "BAD_REQUEST", field: "request" };
  const what =
    refusal.code === "REQUEST_TIMEOUT" ? "the request took too long" : (error.reason ?? error.message);
  const body = JSON.stringify({
    error: { code: refusal.code, message: `${refusal.field}: ${what}`, field: refusal.field },
  });
  socket.end(
    [
      `HTTP/1.1 ${refusal.status} ${REASONS[refusal.status]}`,
      "content-type: application/json; charset=utf-8",
      `content-length: ${Buffer.byteLength(body)}`,
      "cache-control: no-store",
      "connection: close",
      "",
      body,
    ].join("\r\n"),
  );
}
