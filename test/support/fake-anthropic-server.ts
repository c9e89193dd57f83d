import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";

// Anthropic's Messages API on 127.0.0.1 (ephemeral port), in its real wire format: `POST /v1/messages`
// with `stream: true` answers SSE events (`event: <type>` and `data: <JSON>`: message_start,
// content_block_start / content_block_delta (text_delta, input_json_delta) / content_block_stop,
// message_delta with the stop reason and usage, message_stop, ping, error); a failure is an HTTP status
// with Anthropic's error body `{ "type": "error", "error": { "type", "message" } }`.

export type AnthropicStep =
  /** One SSE event: `event: <type>` and `data: <JSON of data>`. */
  | { event: string; data: Record<string, unknown> }
  /** Waits for the promise before the next step. */
  | { pause: Promise<unknown> }
  /** Destroys the socket mid-stream. */
  | { cut: true };

export type AnthropicReply =
  | { stream: AnthropicStep[] }
  | { status: number; body: unknown; headers?: Record<string, string> }
  | { hang: true }
  /** Writes the response itself (a benchmark's paced stream). */
  | ((response: ServerResponse) => void | Promise<void>);

export interface AnthropicRequest {
  path: string;
  headers: IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON body, read by tests as they need
  body: any;
  closed: Promise<void>;
  readonly clientClosed: boolean;
}

export interface FakeAnthropicServer {
  /** The base URL `createAnthropicModel` and `--model-url` take: requests go to `<url>/v1/messages`. */
  url: string;
  requests: AnthropicRequest[];
  reply(...replies: AnthropicReply[]): void;
  waitForRequests(count: number): Promise<AnthropicRequest>;
  close(): Promise<void>;
}

/** A fake server per test that starts one, closed after the test. */
export function useFakeAnthropicServer(): {
  start(replies?: AnthropicReply[]): Promise<FakeAnthropicServer>;
} {
  let current: FakeAnthropicServer | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return {
    async start(replies: AnthropicReply[] = []) {
      current = await startFakeAnthropicServer(replies);
      return current;
    },
  };
}

export async function startFakeAnthropicServer(replies: AnthropicReply[] = []): Promise<FakeAnthropicServer> {
  const queue = [...replies];
  const requests: AnthropicRequest[] = [];
  const waiters: Array<{ count: number; resolve: (request: AnthropicRequest) => void }> = [];
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const piece of req) text += piece;
    let clientClosed = false;
    const closed = new Promise<void>((resolve) =>
      res.on("close", () => {
        clientClosed = !res.writableFinished;
        resolve();
      }),
    );
    const request: AnthropicRequest = {
      path: req.url ?? "",
      headers: req.headers,
      body: text ? JSON.parse(text) : undefined,
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
    if (req.method !== "POST" || req.url !== "/v1/messages")
      return sendJson(res, 404, anthropicError("not_found_error", `no route ${req.method} ${req.url}`));
    const reply = queue.shift() ?? {
      status: 500,
      body: anthropicError("api_error", `fake server: no reply scripted for request ${requests.length}`),
    };
    await play(reply, res);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
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

async function play(reply: AnthropicReply, res: ServerResponse): Promise<void> {
  if (typeof reply === "function") return reply(res);
  if ("hang" in reply) return;
  if ("status" in reply) return sendJson(res, reply.status, reply.body, reply.headers);
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "request-id": "req_fake",
  });
  res.flushHeaders();
  const write = (text: string) => new Promise<void>((resolve) => res.write(text, () => resolve()));
  for (const step of reply.stream) {
    if (res.destroyed) return;
    if ("event" in step) await write(`event: ${step.event}\ndata: ${JSON.stringify(step.data)}\n\n`);
    else if ("pause" in step) await step.pause;
    else {
      res.socket?.destroy();
      return;
    }
  }
  if (!res.destroyed) res.end();
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", "request-id": "req_fake", ...headers });
  res.end(JSON.stringify(body));
}

/** Anthropic's error body. */
export function anthropicError(type: string, message: string) {
  return { type: "error", error: { type, message } };
}

const ev = (event: string, data: Record<string, unknown>): AnthropicStep => ({
  event,
  data: { type: event, ...data },
});

function messageStart(inputTokens: number): AnthropicStep {
  return ev("message_start", {
    message: {
      id: "msg_fake",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-fake",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: inputTokens, output_tokens: 1 },
    },
  });
}

function messageEnd(stopReason: string, outputTokens: number): AnthropicStep[] {
  return [
    ev("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    }),
    ev("message_stop", {}),
  ];
}

/** A text reply streamed in `pieces` (`text_delta`), ending `end_turn` with usage. */
export function anthropicText(pieces: string[], usage: [number, number] = [25, 10]): AnthropicStep[] {
  return [
    messageStart(usage[0]),
    ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    ev("ping", {}),
    ...pieces.map((text) => ev("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
    ev("content_block_stop", { index: 0 }),
    ...messageEnd("end_turn", usage[1]),
  ];
}

/** Tool use blocks (after optional text), their input streamed as `input_json_delta` pieces, ending `tool_use`. */
export function anthropicToolUse(
  calls: Array<{ id: string; name: string; input: Record<string, unknown> }>,
  options: { text?: string; usage?: [number, number] } = {},
): AnthropicStep[] {
  const usage = options.usage ?? [30, 12];
  const steps: AnthropicStep[] = [messageStart(usage[0])];
  let index = 0;
  if (options.text) {
    steps.push(
      ev("content_block_start", { index, content_block: { type: "text", text: "" } }),
      ev("content_block_delta", { index, delta: { type: "text_delta", text: options.text } }),
      ev("content_block_stop", { index }),
    );
    index++;
  }
  for (const call of calls) {
    const json = JSON.stringify(call.input);
    const half = Math.ceil(json.length / 2);
    steps.push(
      ev("content_block_start", {
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
      }),
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: "" } }),
      ev("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: json.slice(0, half) },
      }),
      ev("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: json.slice(half) },
      }),
      ev("content_block_stop", { index }),
    );
    index++;
  }
  return [...steps, ...messageEnd("tool_use", usage[1])];
}

/** An error event inside a stream (Anthropic sends `overloaded_error` this way under load). */
export function anthropicStreamError(type: string, message: string): AnthropicStep {
  return { event: "error", data: anthropicError(type, message) };
}
