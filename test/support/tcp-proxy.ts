import { createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on a free loopback port to one target: a process connected through it can be cut off
 * from the target (a partition) and let back in, without being told.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private cut = false;
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => proxy!.accept(client, targetHost, targetPort));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    proxy = new TcpProxy(server, typeof address === "object" && address ? address.port : 0);
    return proxy;
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.cut) {
      client.destroy();
      return;
    }
    const upstream = new (client.constructor as typeof Socket)();
    upstream.connect(port, host);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Drops every connection and refuses new ones. */
  partition(): void {
    this.cut = true;
    for (const socket of this.sockets) socket.destroy();
  }

  heal(): void {
    this.cut = false;
  }

  async close(): Promise<void> {
    this.partition();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
