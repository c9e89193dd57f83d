/**
 * The HTTP API's cost on loopback: messages accepted per second (`POST /v1/sessions/{key}/messages`,
 * answered with the ack) and ack latency at a steady 1,000 messages/s across 1,000 sessions, with a
 * zero-latency model, the memory store and the `web` channel's memory log; beside a bare `node:http`
 * handler that does the same JSON parse and reply, measured in the same run (the ratio). The load
 * generator (keep-alive `node:http` clients) runs in a worker thread, so a client's reads never wait
 * behind the server's own work on one event loop. Each accepted message starts a turn (model call,
 * delivery, transcript) on the server's event loop, so the accepted rate is what the gateway sustains,
 * turns included, not the cost of acks alone. The same steady load runs again with 2,000 open
 * `GET /v1/events` streams whose clients never read (the ratio of their ack latency to none's).
 */
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { WebChannel } from "../src/adapters/channels/web-channel.js";
import { createGateway } from "../src/gateway/create-gateway.js";
import { createHttpServer } from "../src/http/create-http-server.js";
import { silentLogger } from "../src/logger.js";
import { MemoryDeliveryLog } from "../src/ports/delivery-log.js";
import type { ModelProvider } from "../src/ports/model.js";
import { envNumber, type Figures, percentile, round } from "./bench-support.js";

const SESSIONS = 1000;
const RATE = envNumber("TILLER_BENCH_HTTP_RATE", 1000);
const RATE_SECONDS = envNumber("TILLER_BENCH_HTTP_SECONDS", 1);
const BURST = envNumber("TILLER_BENCH_HTTP_BURST", 1000);
const WARMUP = 300;
const CONNECTIONS = 32;
const IDLE_STREAMS = envNumber("TILLER_BENCH_HTTP_STREAMS", 2000);

const zeroLatencyModel: ModelProvider = {
  async complete() {
    return { text: "ok", toolCalls: [] };
  },
};

interface Target {
  port: number;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/**
 * Opens `count` `GET /v1/events` streams (every session's events) on raw sockets that never read:
 * the server's fan-out must not slow acks down for them.
 */
async function openIdleStreams(port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i += 100) {
    const batch = Array.from(
      { length: Math.min(100, count - i) },
      () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect({ port, host: "127.0.0.1" }, () =>
            socket.write("GET /v1/events HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n\r\n"),
          );
          socket.once("data", () => {
            socket.pause();
            resolve(socket);
          });
          // A reset when the server closes is expected; before the head, it fails the bench.
          socket.on("error", (error) => reject(error));
        }),
    );
    sockets.push(...(await Promise.all(batch)));
  }
  return sockets;
}

async function gatewayTarget(idleStreams = 0): Promise<Target> {
  const web = new WebChannel(new MemoryDeliveryLog());
  const gateway = createGateway({ model: zeroLatencyModel, channels: { web }, logger: silentLogger });
  const http = createHttpServer({ gateway, web });
  await gateway.start();
  http.markReady();
  const port = await listen(http.server);
  const streams = await openIdleStreams(port, idleStreams);
  if (http.feed.listenerCount !== idleStreams) throw new Error(`${http.feed.listenerCount} streams open`);
  return {
    port,
    async close() {
      for (const socket of streams) socket.destroy();
      await http.close();
      await gateway.stop();
    },
  };
}

/** The floor: read the body, parse it, answer a JSON ack of the same shape. */
async function bareTarget(): Promise<Target> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { text: string; id: string };
      const text = JSON.stringify({
        ack: {
          session: req.url,
          messageId: body.id,
          disposition: "started",
          mode: "steer",
          modeSource: "default",
          text: "Got it, working on it.",
        },
      });
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-length": Buffer.byteLength(text),
      });
      res.end(text);
    });
  });
  const port = await listen(server);
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The load generator, run as a worker thread from source text (plain JavaScript, so it runs alike from
 * the TypeScript sources and from the compiled bench): keep-alive `node:http` clients that POST
 * messages, either back to back on `connections` sockets (`burst`: messages/s) or on an open loop at
 * `rate` per second for `seconds` (`steady`: every ack's latency in ms).
 */
const LOAD_WORKER = `
const { Agent, request } = require("node:http");
const { parentPort, workerData } = require("node:worker_threads");
const { kind, port, offset, count, connections, rate, seconds, sessions } = workerData;
const agent = new Agent({ keepAlive: true, maxSockets: kind === "burst" ? connections : 256 });
function post(n) {
  const body = JSON.stringify({ text: "message " + n + " about the report", id: "b" + n });
  const path = "/v1/sessions/" + encodeURIComponent("web:" + (n % sessions)) + "/messages";
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ agent, port, host: "127.0.0.1", method: "POST", path,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on("end", () => res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error("HTTP " + res.statusCode)));
    });
    req.on("error", reject);
    req.end(body);
  });
}
async function burst() {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => { while (next < count) await post(offset + next++); }));
  return count / ((performance.now() - t0) / 1000);
}
async function steady() {
  const total = rate * seconds;
  const pending = [];
  const t0 = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    while (sent < due) pending.push(post(offset + sent++));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const latencies = (await Promise.all(pending)).sort((a, b) => a - b);
  return { latencies, achieved: total / ((performance.now() - t0) / 1000) };
}
(kind === "burst" ? burst() : steady()).then((result) => { agent.destroy(); parentPort.postMessage(result); },
  (error) => { throw error; });
`;

type LoadTask =
  | { kind: "burst"; port: number; offset: number; count: number }
  | { kind: "steady"; port: number; offset: number };

function inWorker<T>(task: LoadTask): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(LOAD_WORKER, {
      eval: true,
      workerData: {
        ...task,
        connections: CONNECTIONS,
        rate: RATE,
        seconds: RATE_SECONDS,
        sessions: SESSIONS,
      },
    });
    worker.once("message", (result: T) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once("error", reject);
  });
}

interface Measured {
  perSecond: number;
  p50: number;
  p99: number;
  rate: number;
}

async function measure(target: Target): Promise<Measured> {
  const { port } = target;
  try {
    await inWorker({ kind: "burst", port, offset: 10_000_000, count: WARMUP }); // JIT, sessions, sockets
    const perSecond = await inWorker<number>({ kind: "burst", port, offset: 0, count: BURST });
    const { latencies, achieved } = await inWorker<{ latencies: number[]; achieved: number }>({
      kind: "steady",
      port,
      offset: 1_000_000,
    });
    return {
      perSecond,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      rate: achieved,
    };
  } finally {
    await target.close();
  }
}

export async function benchHttp(): Promise<Figures> {
  const bare = await measure(await bareTarget());
  const gateway = await measure(await gatewayTarget());
  const streamed = await measure(await gatewayTarget(IDLE_STREAMS));
  return {
    "http.accepted.perSecond": Math.round(gateway.perSecond),
    "http.bare.perSecond": Math.round(bare.perSecond),
    "http.accepted.ratioToBare": round(gateway.perSecond / bare.perSecond, 3),
    "http.steady.offeredPerSecond": RATE,
    "http.steady.sessions": SESSIONS,
    "http.steady.sentPerSecond": Math.round(gateway.rate),
    "http.ack.p50Ms": round(gateway.p50),
    "http.ack.p99Ms": round(gateway.p99),
    "http.bare.p50Ms": round(bare.p50),
    "http.bare.p99Ms": round(bare.p99),
    "http.ack.p50.ratioToBare": round(gateway.p50 / bare.p50, 2),
    "http.ack.p99.ratioToBare": round(gateway.p99 / bare.p99, 2),
    "http.streams.idle": IDLE_STREAMS,
    "http.streams.ack.p50Ms": round(streamed.p50),
    "http.streams.ack.p99Ms": round(streamed.p99),
    "http.streams.ack.p50.ratioToNone": round(streamed.p50 / gateway.p50, 2),
    "http.streams.ack.p99.ratioToNone": round(streamed.p99 / gateway.p99, 2),
    "http.streams.ack.p99.ratioToNone.target": "< 3",
    "http.streams.accepted.perSecond": Math.round(streamed.perSecond),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await benchHttp();
  for (const [key, value] of Object.entries(figures)) console.log(`  ${key}  ${value}`);
}
