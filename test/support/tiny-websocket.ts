import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** One server side of a WebSocket (RFC 6455): text frames, ping answered with pong, close. */
export class TinySocket {
  private buffer = Buffer.alloc(0);
  private closed = false;
  onText: (text: string) => void = () => {};
  onClose: () => void = () => {};

  constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.drain();
    });
    socket.on("close", () => this.end());
    socket.on("error", () => this.end());
  }

  send(text: string): void {
    this.frame(0x1, Buffer.from(text, "utf8"));
  }

  /** Closes with a close frame, as a server that is going away does. */
  close(code = 1000): void {
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code);
    this.frame(0x8, payload);
    this.socket.end();
  }

  /** Cuts the connection without a close frame, as a dead network does. */
  terminate(): void {
    this.socket.destroy();
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
  }

  private frame(opcode: number, payload: Buffer): void {
    if (this.closed || this.socket.destroyed) return;
    const length = payload.length;
    const head =
      length < 126
        ? Buffer.from([0x80 | opcode, length])
        : length < 65536
          ? Buffer.from([0x80 | opcode, 126, length >> 8, length & 0xff])
          : Buffer.concat([Buffer.from([0x80 | opcode, 127]), bigLength(length)]);
    this.socket.write(Buffer.concat([head, payload]));
  }

  private drain(): void {
    for (;;) {
      if (this.buffer.length < 2) return;
      const opcode = this.buffer[0]! & 0x0f;
      const masked = (this.buffer[1]! & 0x80) !== 0;
      let length = this.buffer[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffer.length < 4) return;
        length = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffer.length < 10) return;
        length = Number(this.buffer.readBigUInt64BE(2));
        offset = 10;
      }
      const maskAt = offset;
      if (masked) offset += 4;
      if (this.buffer.length < offset + length) return;
      const payload = Buffer.from(this.buffer.subarray(offset, offset + length));
      if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= this.buffer[maskAt + (i % 4)]!;
      this.buffer = this.buffer.subarray(offset + length);
      if (opcode === 0x1) this.onText(payload.toString("utf8"));
      else if (opcode === 0x9) this.frame(0xa, payload);
      else if (opcode === 0x8) {
        this.frame(0x8, payload.subarray(0, 2));
        this.socket.end();
      }
    }
  }
}

function bigLength(length: number): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(BigInt(length));
  return out;
}

/** An HTTP server that upgrades every request to a {@link TinySocket} (refused when `accept` says no). */
export async function startTinyWebSocketServer(
  onSocket: (socket: TinySocket, req: IncomingMessage) => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.writeHead(426).end());
  server.on("upgrade", (req: IncomingMessage, socket: Socket) => {
    const key = req.headers["sec-websocket-key"];
    if (typeof key !== "string") return socket.destroy();
    const accept = createHash("sha1")
      .update(key + GUID)
      .digest("base64");
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    onSocket(new TinySocket(socket), req);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}
