import { connect } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: { error?: { code: string; message: string; field?: string } } & Record<string, unknown>;
  /** The server closed the connection. */
  closed: boolean;
  /** ms from the first byte sent to the close (or to `waitMs`). */
  elapsedMs: number;
}

/**
 * Sends raw bytes to a server (what `fetch` would refuse to send), in `chunks` spaced `gapMs` apart,
 * and reads the answer until the server closes or `waitMs` passes. The body is parsed as JSON.
 */
export function rawRequest(
  url: string,
  chunks: Array<string | Buffer>,
  options: { gapMs?: number; waitMs?: number } = {},
): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const received: Buffer[] = [];
    const started = performance.now();
    let closed = false;
    const socket = connect({ host: hostname, port: Number(port) }, async () => {
      for (const [index, chunk] of chunks.entries()) {
        if (closed) return;
        if (index > 0 && options.gapMs) await new Promise((r) => setTimeout(r, options.gapMs));
        if (!closed) socket.write(chunk);
      }
    });
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parse(Buffer.concat(received).toString("utf8"), closed, performance.now() - started));
    };
    const timer = setTimeout(finish, options.waitMs ?? 5000);
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    socket.on("close", () => {
      closed = true;
      finish();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "ECONNRESET" && error.code !== "EPIPE") reject(error);
    });
  });
}

function parse(text: string, closed: boolean, elapsedMs: number): RawAnswer {
  const [head = "", ...rest] = text.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const bodyText = rest.join("\r\n\r\n");
  let body: RawAnswer["body"] = {};
  try {
    body = bodyText ? (JSON.parse(bodyText) as RawAnswer["body"]) : {};
  } catch {
    body = { raw: bodyText };
  }
  return { status: Number(statusLine.split(" ")[1] ?? 0), headers, body, closed, elapsedMs };
}
