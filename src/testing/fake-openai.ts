import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

// A chat-completions server on 127.0.0.1 (ephemeral port) that replays the real wire format: SSE
// `data: {...}` chunks and `data: [DONE]`, or an error status with a JSON body. Each request takes the
// next scripted reply; every request is kept (headers, parsed body) with a promise for its socket closing.

/** One step of a streamed reply. */
export type FakeStep =
  /** One SSE event `data: <JSON>`. */
  | { chunk: Record<string, unknown> }
  /** Written as is (a malformed chunk, a comment line, a partial event). */
  | { raw: string }
  /** `data: [DONE]`, then the response ends. */
  | { done: true }
  /** Waits for the promise before the next step (the test decides when the stream goes on). */
  | { pause: Promise<unknown> }
  /** Destroys the socket: the stream is cut mid-way. */
  | { cut: true };

/**
 * One scripted reply. `{ text }` and `{ toolCalls }` answer as OpenAI would (streamed in chunks when the
 * request asks for a stream, one JSON completion otherwise); `{ stream }` plays exact steps;
 * `{ status }` fails (429 with `retry-after`, 500, ...); `{ hang }` never answers.
 */
export type FakeReply =
  | { text: string; pieces?: number; usage?: [number, number] }
  | { toolCalls: FakeToolCall[]; text?: string }
  | { stream: FakeStep[]; headers?: Record<string, string> }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** Sends nothing, not even headers, until the client gives up. */
  | { hang: true }
  | ((response: ServerResponse, request: FakeRequest) => void | Promise<void>);

/** A request the fake server received. */
export interface FakeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON body, read by tests as they need
  body: any;
  /** Resolves when the exchange's response closes, whoever closed it. */
  closed: Promise<void>;
  /** The client closed the connection before the reply was complete. */
  readonly clientClosed: boolean;
}

/** A running fake server: {@link startFakeOpenAI} resolves to it. */
export interface FakeOpenAIServer {
  /** The base URL a provider takes: `http://127.0.0.1:<port>/v1`. */
  url: string;
  requests: FakeRequest[];
  /** Queues replies for the next requests, in order. */
  reply(...replies: FakeReply[]): void;
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count: number): Promise<FakeRequest>;
  close(): Promise<void>;
}

/** Options of {@link startFakeOpenAI}. */
export interface FakeOpenAIOptions {
  /** Replies for the first requests, in order; `reply()` queues more. @default [] */
  replies?: FakeReply[];
}

/**
 * Starts a local OpenAI-compatible chat-completions server on 127.0.0.1 (an ephemeral port) for tests:
 * scripted replies in the real wire format (streamed `chat.completion.chunk` events and `[DONE]`, or a
 * JSON completion), tool calls streamed as OpenAI streams them, and failures (a status with an OpenAI
 * error body, a cut stream, a hang). A request with no scripted reply left gets a 500 saying so, so a
 * test that makes one call too many fails loudly.
 *
 * @example
 * ```ts
 * import { createOpenAIModel } from "tiller-gateway";
 * import { startFakeOpenAI } from "tiller-gateway/testing";
 * const server = await startFakeOpenAI({ replies: [{ text: "Hello" }, { status: 429, headers: { "retry-after": "1" } }] });
 * const model = createOpenAIModel({ baseURL: server.url, apiKey: "test", model: "fake-model" });
 * // ... then await server.close();
 * ```
 */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAIServer> {
  const queue = [...(options.replies ?? [])];
  const requests: FakeRequest[] = [];
  const waiters: Array<{ count: number; resolve: (request: FakeRequest) => void }> = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let clientClosed = false;
    const closed = new Promise<void>((resolve) =>
      res.on("close", () => {
        clientClosed = !res.writableFinished;
        resolve();
      }),
    );
    const request: FakeRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: text ? safeJson(text) : undefined,
      closed,
      get clientClosed() {
        return clientClosed;
      },
    };
    requests.push(request);
    for (const waiter of waiters.filter((w) => w.count <= requests.length)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(request);
    }
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
      return;
    }
    const reply = queue.shift() ?? {
      status: 500,
      body: { error: { message: `fake server: no reply scripted for request ${requests.length}` } },
    };
    await play(reply, res, request);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...more) => queue.push(...more),
    waitForRequests(count) {
      const arrived = requests[count - 1];
      if (arrived) return Promise.resolve(arrived);
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Plays one scripted reply on `res` (for a function reply that decides from the request what to send). */
export async function play(reply: FakeReply, res: ServerResponse, request: FakeRequest): Promise<void> {
  if (typeof reply === "function") return reply(res, request);
  if ("hang" in reply) return;
  if ("status" in reply)
    return sendJson(res, reply.status, reply.body ?? errorBody(reply.status), reply.headers);
  if ("text" in reply || "toolCalls" in reply) {
    const calls = "toolCalls" in reply ? reply.toolCalls : [];
    if (request.body?.stream !== true) return sendJson(res, 200, completion(reply.text ?? null, calls));
    const stream =
      calls.length > 0
        ? toolCallStream(calls, reply.text === undefined ? {} : { text: reply.text })
        : textStream(
            split(reply.text ?? "", "pieces" in reply ? (reply.pieces ?? 3) : 3),
            "usage" in reply && reply.usage ? { usage: reply.usage } : {},
          );
    return play({ stream }, res, request);
  }
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    ...reply.headers,
  });
  res.flushHeaders();
  // Each write is handed to the socket before the next step, so a cut never swallows what came before.
  const write = (text: string) => new Promise<void>((resolve) => res.write(text, () => resolve()));
  for (const step of reply.stream) {
    if (res.destroyed) return;
    if ("chunk" in step) await write(`data: ${JSON.stringify(step.chunk)}\n\n`);
    else if ("raw" in step) await write(step.raw);
    else if ("pause" in step) await step.pause;
    else if ("cut" in step) {
      res.socket?.destroy();
      return;
    } else if ("done" in step) {
      res.end("data: [DONE]\n\n");
      return;
    }
  }
  if (!res.destroyed) res.end();
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** OpenAI's error body for a status. */
function errorBody(status: number): unknown {
  const type =
    status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { message: `fake server: status ${status}`, type, param: null, code: type } };
}

/** A non-streamed `chat.completion`. */
function completion(text: string | null, calls: FakeToolCall[]): unknown {
  return {
    id: "chatcmpl-fake",
    object: "chat.completion",
    created: created++,
    model: "fake-model",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: text,
          refusal: null,
          ...(calls.length > 0
            ? {
                tool_calls: calls.map((call) => ({
                  id: call.id,
                  type: "function",
                  function: { name: call.name, arguments: JSON.stringify(call.args) },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: calls.length > 0 ? "tool_calls" : "stop",
      },
    ],
    usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// Chunk builders: the shapes OpenAI's own streaming endpoint sends.

let created = 1_700_000_000;

/** One `chat.completion.chunk` with a single choice. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null): FakeStep {
  return {
    chunk: {
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: created++,
      model: "fake-model",
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    },
  };
}

/** The usage chunk `stream_options.include_usage` asks for: no choices. */
export function usageChunk(prompt: number, completion: number): FakeStep {
  return {
    chunk: {
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: created++,
      model: "fake-model",
      choices: [],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    },
  };
}

/** A text reply streamed in `pieces`, with a finish reason, usage and `[DONE]`. */
export function textStream(pieces: string[], options: { usage?: [number, number] } = {}): FakeStep[] {
  return [
    chunk({ role: "assistant", content: "" }),
    ...pieces.map((content) => chunk({ content })),
    chunk({}, "stop"),
    ...(options.usage ? [usageChunk(...options.usage)] : []),
    { done: true },
  ];
}

/** A tool call the fake model makes. */
export interface FakeToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/**
 * Tool calls as servers stream them: per call a first chunk with its index, id and name, then its
 * argument text in `pieces` chunks. Several calls are interleaved piece by piece (parallel calls).
 */
export function toolCallStream(
  calls: FakeToolCall[],
  options: { pieces?: number; text?: string } = {},
): FakeStep[] {
  const pieces = options.pieces ?? 3;
  const steps: FakeStep[] = [chunk({ role: "assistant", content: options.text ?? null })];
  const parts = calls.map((call) => split(JSON.stringify(call.args), pieces));
  calls.forEach((call, index) => {
    steps.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
    );
  });
  for (let piece = 0; piece < pieces; piece++) {
    calls.forEach((_, index) => {
      const argument = parts[index]![piece];
      if (argument) steps.push(chunk({ tool_calls: [{ index, function: { arguments: argument } }] }));
    });
  }
  steps.push(chunk({}, "tool_calls"), usageChunk(20, 10), { done: true });
  return steps;
}

function split(text: string, pieces: number): string[] {
  if (text === "") return [""];
  const size = Math.ceil(text.length / pieces);
  return Array.from({ length: pieces }, (_, i) => text.slice(i * size, (i + 1) * size));
}

/** A promise and the function that resolves it, for `{ pause }` steps. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
