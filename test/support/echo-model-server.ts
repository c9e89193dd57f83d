import type { ServerResponse } from "node:http";
import {
  type FakeOpenAIServer,
  type FakeRequest,
  startFakeOpenAI,
  textStream,
} from "./fake-openai-server.js";

/**
 * A chat-completions server (the real streaming wire format) that answers every request at once with
 * "Answer to: <the last user message>": a zero-latency model for load and fault tests of real
 * `tiller serve` processes (`--model-url`). `delayMs` holds each answer that long (turns in flight
 * when a fault strikes).
 */
export async function startEchoModelServer(options: { delayMs?: number } = {}): Promise<FakeOpenAIServer> {
  const server = await startFakeOpenAI();
  const answer = async (res: ServerResponse, request: FakeRequest) => {
    server.reply(answer);
    if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    const messages = (request.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
    const last = [...messages].reverse().find((m) => m.role === "user");
    const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const step of textStream([`Answer to: ${text}`]))
      if ("chunk" in step) res.write(`data: ${JSON.stringify(step.chunk)}\n\n`);
    res.end("data: [DONE]\n\n");
  };
  // Each reply queues the next one, so the server never runs dry; a few in hand for parallel calls.
  for (let i = 0; i < 64; i++) server.reply(answer);
  return server;
}
