import { connect, type Socket } from "node:net";

/**
 * Opens `count` event streams on raw sockets that never read what the server sends (a client that
 * does not read: the server's send buffers fill). Resolves once each has its response head.
 */
export async function openIdleStreams(url: string, path: string, count: number): Promise<Socket[]> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, () =>
      openOne(hostname, Number(port), path),
    );
    sockets.push(...(await Promise.all(batch)));
  }
  return sockets;
}

function openOne(host: string, port: number, path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: ${host}\r\naccept: text/event-stream\r\n\r\n`);
    });
    socket.once("data", () => {
      // The head is in: from now on nothing is read, so the kernel's buffers and then the server's fill.
      socket.pause();
      resolve(socket);
    });
    socket.on("error", (error) => reject(error));
  });
}
