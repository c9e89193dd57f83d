/**
 * Model adapters benchmark: per-chunk latency, one chunk in flight at a time, p50 / p99 in µs, each
 * against its floor measured in the same run, alternated in short rounds.
 *
 * - AI SDK adapter (`createAISDKModel`): from a stream part enqueued by an in-process AI SDK model to
 *   `onDelta`; floor: a plain reader loop on the same kind of stream. The ratio is what the adapter
 *   adds per chunk.
 * - Anthropic path (`createAnthropicModel`, the AI SDK's Anthropic provider on that adapter) over
 *   loopback against the Messages API fake: from the server's write of a `content_block_delta` event
 *   to `onDelta`; floor: `fetch` with a minimal SSE split and `JSON.parse`, as the OpenAI provider's
 *   figure is measured.
 *
 * Run alone with `npx tsx bench/models.bench.ts`.
 */
import type { ServerResponse } from "node:http";
import { pathToFileURL } from "node:url";
import type { LanguageModelV3, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { createAISDKModel } from "../src/adapters/ai-sdk/create-ai-sdk-model.js";
import { createAnthropicModel } from "../src/adapters/anthropic/create-anthropic-model.js";
import type { ModelRequest } from "../src/ports/model.js";
import { startFakeAnthropicServer } from "../test/support/fake-anthropic-server.js";
import { type Figures, percentile, round } from "./bench-support.js";

const CHUNKS = 3000;
const WARMUP = 300;
const ROUNDS = 6;

function request(onDelta: (text: string) => void): ModelRequest {
  return {
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
    onDelta,
  };
}

const sorted = (values: number[]) => values.sort((a, b) => a - b);
const micros = (sentAt: number[], receivedAt: number[]) =>
  receivedAt.map((at, i) => (at - sentAt[i]!) * 1000);

/** A stream that enqueues text part `i + 1` only once part `i` was reported, timing each enqueue. */
function pacedParts(count: number, sentAt: number[]) {
  let next: (() => void) | null = null;
  const stream = new ReadableStream<LanguageModelV3StreamPart>({
    async start(controller) {
      controller.enqueue({ type: "stream-start", warnings: [] });
      for (let i = 0; i < count; i++) {
        const arrived = new Promise<void>((resolve) => {
          next = resolve;
        });
        sentAt[i] = performance.now();
        controller.enqueue({ type: "text-delta", id: "t", delta: `w${i} ` });
        await arrived;
      }
      controller.enqueue({
        type: "finish",
        finishReason: { unified: "stop", raw: "stop" },
        usage: {
          inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: count, text: count, reasoning: 0 },
        },
      });
      controller.close();
    },
  });
  return { stream, arrived: () => next?.() };
}

async function viaAdapter(count: number): Promise<number[]> {
  const sentAt: number[] = [];
  const receivedAt: number[] = [];
  let paced: ReturnType<typeof pacedParts> | undefined;
  const model: LanguageModelV3 = {
    specificationVersion: "v3",
    provider: "bench",
    modelId: "bench",
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error("not used")),
    doStream: async () => {
      paced = pacedParts(count, sentAt);
      return { stream: paced.stream };
    },
  };
  await createAISDKModel({ model }).complete(
    request(() => {
      receivedAt.push(performance.now());
      paced?.arrived();
    }),
  );
  return micros(sentAt, receivedAt);
}

async function viaRawStream(count: number): Promise<number[]> {
  const sentAt: number[] = [];
  const receivedAt: number[] = [];
  const paced = pacedParts(count, sentAt);
  const reader = paced.stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.type === "text-delta") {
      receivedAt.push(performance.now());
      paced.arrived();
    }
  }
  return micros(sentAt, receivedAt);
}

/** A Messages API stream of `count` text deltas, each written once the client reported the one before. */
function pingPong(count: number, script: { next: (() => void) | null; sentAt: number[] }) {
  return async (res: ServerResponse) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders();
    const event = (type: string, data: Record<string, unknown>) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    res.write(
      event("message_start", {
        message: {
          id: "msg_b",
          type: "message",
          role: "assistant",
          content: [],
          model: "bench",
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        },
      }) + event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    );
    for (let i = 0; i < count; i++) {
      const arrived = new Promise<void>((resolve) => {
        script.next = resolve;
      });
      script.sentAt[i] = performance.now();
      res.write(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: `w${i} ` } }));
      await arrived;
    }
    res.end(
      event("content_block_stop", { index: 0 }) +
        event("message_delta", {
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: count },
        }) +
        event("message_stop", {}),
    );
  };
}

type Script = { next: (() => void) | null; sentAt: number[] };

async function viaAnthropic(url: string, queue: (count: number) => Script, count: number) {
  const model = createAnthropicModel({ model: "bench", apiKey: "bench", baseURL: url });
  const receivedAt: number[] = [];
  const script = queue(count);
  await model.complete(
    request(() => {
      receivedAt.push(performance.now());
      script.next?.();
    }),
  );
  return micros(script.sentAt, receivedAt);
}

async function viaFetch(url: string, queue: (count: number) => Script, count: number) {
  const receivedAt: number[] = [];
  const script = queue(count);
  const response = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "bench" },
    body: JSON.stringify({
      model: "bench",
      stream: true,
      max_tokens: 10,
      messages: [{ role: "user", content: "go" }],
    }),
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
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\n\n");
      const data = block.split("\n").find((line) => line.startsWith("data: "));
      if (!data) continue;
      const parsed = JSON.parse(data.slice(6));
      if (parsed.type === "content_block_delta" && parsed.delta?.type === "text_delta") {
        receivedAt.push(performance.now());
        script.next?.();
      }
    }
  }
  return micros(script.sentAt, receivedAt);
}

export async function benchModels(): Promise<Figures> {
  const server = await startFakeAnthropicServer();
  const queue = (count: number): Script => {
    const script: Script = { next: null, sentAt: [] };
    server.reply(pingPong(count, script));
    return script;
  };
  try {
    await viaAdapter(WARMUP);
    await viaRawStream(WARMUP);
    await viaAnthropic(server.url, queue, WARMUP);
    await viaFetch(server.url, queue, WARMUP);
    const adapter: number[] = [];
    const raw: number[] = [];
    const anthropic: number[] = [];
    const floor: number[] = [];
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      adapter.push(...(await viaAdapter(CHUNKS / ROUNDS)));
      raw.push(...(await viaRawStream(CHUNKS / ROUNDS)));
      anthropic.push(...(await viaAnthropic(server.url, queue, CHUNKS / ROUNDS)));
      floor.push(...(await viaFetch(server.url, queue, CHUNKS / ROUNDS)));
    }
    for (const side of [adapter, raw, anthropic, floor]) sorted(side);
    const p50 = (side: number[]) => percentile(side, 50);
    return {
      "chunks per side": CHUNKS,
      "AI SDK adapter part→onDelta p50 µs": round(p50(adapter), 1),
      "AI SDK adapter part→onDelta p99 µs": round(percentile(adapter, 99), 1),
      "floor (reader loop on the part stream) p50 µs": round(p50(raw), 1),
      "AI SDK adapter / floor p50": round(p50(adapter) / p50(raw), 2),
      "AI SDK adapter overhead p50 µs": round(p50(adapter) - p50(raw), 1),
      "anthropic write→onDelta p50 µs": round(p50(anthropic), 1),
      "anthropic write→onDelta p99 µs": round(percentile(anthropic, 99), 1),
      "floor (fetch + SSE split) p50 µs": round(p50(floor), 1),
      "floor (fetch + SSE split) p99 µs": round(percentile(floor, 99), 1),
      "anthropic / floor p50": round(p50(anthropic) / p50(floor), 2),
      "anthropic overhead p50 µs": round(p50(anthropic) - p50(floor), 1),
    };
  } finally {
    await server.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) console.log(await benchModels());
