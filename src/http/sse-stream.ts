import type { IncomingMessage, ServerResponse } from "node:http";

export interface SseMessage {
  id?: string;
  event: string;
  data: unknown;
}

/**
 * One server-sent-events response: `id:`/`event:`/`data:` frames, a comment line every `heartbeatMs`
 * so proxies and clients keep the connection, and one `onClose` when the client goes away. `send`
 * returns false when the socket's buffer is full: the caller stops and resumes on `onDrain`, so a slow
 * client holds a cursor, not an ever-growing buffer.
 */
export class SseStream {
  private closed = false;
  private readonly closers: Array<() => void> = [];
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    req: IncomingMessage,
    private readonly res: ServerResponse,
    heartbeatMs: number,
  ) {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    // A comment at once lets a client see the stream is open before the first event.
    res.write(": open\n\n");
    this.heartbeat = setInterval(() => {
      if (res.writableLength === 0) res.write(": keep-alive\n\n");
    }, heartbeatMs);
    this.heartbeat.unref();
    const close = () => this.finish();
    req.on("close", close);
    res.on("close", close);
    res.on("error", close);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  send(message: SseMessage): boolean {
    if (this.closed) return false;
    const data = JSON.stringify(message.data);
    const id = message.id === undefined ? "" : `id: ${message.id}\n`;
    return this.res.write(`${id}event: ${message.event}\ndata: ${data}\n\n`);
  }

  /** Writes frames already formatted; false once the send buffer is full (wait for `onDrain`). */
  write(chunk: string): boolean {
    return this.closed ? true : this.res.write(chunk);
  }

  /** Writes a comment line (ignored by clients). */
  comment(text: string): void {
    if (!this.closed) this.res.write(`: ${text.replace(/\n/g, " ")}\n\n`);
  }

  onDrain(callback: () => void): void {
    this.res.once("drain", callback);
  }

  onClose(callback: () => void): void {
    if (this.closed) callback();
    else this.closers.push(callback);
  }

  /** Ends the response (the client sees the stream end and may reconnect with `Last-Event-ID`). */
  end(): void {
    if (!this.closed) this.res.end();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const closer of this.closers.splice(0)) closer();
  }
}
