/**
 * OpenAI-compatible provider benchmark, over loopback against the fake chat-completions server:
 * per-chunk latency from the server's write of an SSE chunk to the provider's `onDelta`, one chunk in
 * flight at a time (the server writes the next chunk when the previous one has arrived), p50 / p99 in
 * µs. The floor, measured in the same run on the same server: plain `fetch` reading the body with a
 * minimal SSE split (`\n\n`, `data: `, JSON.parse). The ratio is what the SDK's stream parsing and the
 * provider's assembly add per chunk.
 *
 * Run alone with `npx tsx bench/openai.bench.ts`.
 */
import type { ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";
import { createOpenAIModel } from "../src/adapters/openai/create-openai-model.js";
import { chunk, type FakeReply, startFakeOpenAI } from "../test/support/fake-openai-server.js";
import { type Figures, percentile, round } from "./bench-support.js";

const CHUNKS = 3000;
const WARMUP = 300;
const ROUNDS = 6;

/** A reply that writes `count` text chunks, each only after the client reported the one before. */
function pingPong(count: number, arrivals: { next: (() => void) | null }, sentAt: number[]): FakeReply {
  return async (res: ServerResponse) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    const body = (index: number) => {
      const step = chunk({ content: `w${index} ` }) as { chunk: Record<string, unknown> };
      return `data: ${JSON.stringify(step.chunk)}\n\n`;
    };
    for (let i = 0; i < count; i++) {
      const arrived = new Promise<void>((resolve) => {
        arrivals.next = resolve;
      });
      sentAt[i] = performance.now();
      res.write(body(i));
      await arrived;
    }
    const end = chunk({}, "stop") as { chunk: Record<string, unknown> };
    res.end(`data: ${JSON.stringify(end.chunk)}\n\ndata: [DONE]\n\n`);
  };
}

function latencies(sentAt: number[], receivedAt: number[]): number[] {
  return receivedAt.map((at, i) => (at - sentAt[i]!) * 1000).sort((a, b) => a - b);
}

interface Script {
  arrivals: { next: (() => void) | null };
  sentAt: number[];
}

type Queue = (count: number) => Script;

async function viaProvider(baseURL: string, queue: Queue, count: number) {
  const model = createOpenAIModel({ baseURL, model: "bench" });
  const receivedAt: number[] = [];
  const { arrivals, sentAt } = queue(count);
  await model.complete({
    session: "bench",
    runId: "bench#1",
    call: 1,
    recheck: false,
    recovery: false,
    review: false,
    context: [{ role: "user", text: "go", messageId: "m1" }],
    turnStart: 0,
    tools: [],
    signal: new AbortController().signal,
    onDelta: () => {
      receivedAt.push(performance.now());
      arrivals.next?.();
    },
  });
  return latencies(sentAt, receivedAt);
}

async function viaFetch(baseURL: string, queue: Queue, count: number) {
  const receivedAt: number[] = [];
  const { arrivals, sentAt } = queue(count);
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "bench", stream: true, messages: [{ role: "user", content: "go" }] }),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
      const content = JSON.parse(event.slice(6)).choices[0]?.delta?.content;
      if (typeof content === "string") {
        receivedAt.push(performance.now());
        arrivals.next?.();
      }
    }
  }
  return latencies(sentAt, receivedAt);
}

export async function benchOpenAI(): Promise<Figures> {
  const server = await startFakeOpenAI();
  // Each run queues its own ping-pong reply and reads its own send times.
  const reply: Queue = (count) => {
    const script: Script = { arrivals: { next: null }, sentAt: [] };
    server.reply(pingPong(count, script.arrivals, script.sentAt));
    return script;
  };
  try {
    await viaProvider(server.url, reply, WARMUP);
    await viaFetch(server.url, reply, WARMUP);
    // Alternated in short rounds, so both sides see the same machine load.
    const provider: number[] = [];
    const floor: number[] = [];
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      provider.push(...(await viaProvider(server.url, reply, CHUNKS / ROUNDS)));
      floor.push(...(await viaFetch(server.url, reply, CHUNKS / ROUNDS)));
    }
    provider.sort((a, b) => a - b);
    floor.sort((a, b) => a - b);
    const p50 = percentile(provider, 50);
    const floorP50 = percentile(floor, 50);
    return {
      "chunks per side": CHUNKS,
      "provider write→onDelta p50 µs": round(p50, 1),
      "provider write→onDelta p99 µs": round(percentile(provider, 99), 1),
      "floor (fetch + SSE split) p50 µs": round(floorP50, 1),
      "floor (fetch + SSE split) p99 µs": round(percentile(floor, 99), 1),
      "provider / floor p50": round(p50 / floorP50, 2),
      "provider overhead p50 µs": round(p50 - floorP50, 1),
    };
  } finally {
    await server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) console.log(await benchOpenAI());
