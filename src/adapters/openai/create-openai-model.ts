import OpenAI from "openai";
import type { ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import { ModelError } from "../../errors.js";
import { type Logger, silentLogger } from "../../logger.js";
import type { Clock } from "../../ports/clock.js";
import { type ModelProvider, type ModelReply, type ModelRequest, systemPrompt } from "../../ports/model.js";
import { SystemClock } from "../system-clock.js";
import { withRetries } from "./backoff.js";
import { classifyError, timeoutError } from "./classify-error.js";
import { type OpenAIModelOptions, type OpenAISettings, parseOpenAIOptions } from "./options.js";
import { readStream, type StreamProgress } from "./read-stream.js";
import { toChatMessages, toChatTools } from "./to-chat-messages.js";

/** The OpenAI-compatible provider: a {@link ModelProvider} with a view of its own HTTP traffic. */
export interface OpenAIModel extends ModelProvider {
  /** True while an HTTP exchange is in flight (not while waiting to retry): lets a simulated clock wait. */
  readonly isBusy: boolean;
  /** The options in force, defaults applied (the API key and headers left out: they may hold credentials). */
  readonly settings: Readonly<OpenAISettings>;
}

/**
 * A model provider for any server that speaks `POST /v1/chat/completions` with streaming (OpenAI,
 * vLLM, llama.cpp's server, Ollama, LM Studio). Every call streams: text reaches `onDelta` as it
 * arrives, tool calls are assembled across chunks, the finish reason and token usage are reported.
 * The request's signal closes the HTTP stream at once. Failures are typed ({@link ModelError});
 * rate limits and unavailability are retried with exponential backoff and jitter, honouring
 * `Retry-After`, on the given clock, and only while nothing of the reply has arrived.
 *
 * @example
 * ```ts
 * const model = createOpenAIModel({ baseURL: "http://127.0.0.1:11434/v1", model: "qwen2.5:7b" });
 * const gateway = createGateway({ model, channels: { web }, tools });
 * ```
 */
export function createOpenAIModel(options: OpenAIModelOptions): OpenAIModel {
  const { headers, ...settings } = parseOpenAIOptions(options);
  const clock: Clock = options.clock ?? new SystemClock();
  const logger: Logger = options.logger ?? silentLogger;
  const client = new OpenAI({
    baseURL: settings.baseURL,
    // The SDK insists on a key; without one the Authorization header is dropped below, so a local
    // server never receives a made-up credential (nor one read from the environment).
    apiKey: options.apiKey || "unused",
    defaultHeaders: { ...headers, ...(options.apiKey ? {} : { Authorization: null }) },
    maxRetries: 0, // retries are ours: on the gateway's clock, and never once a reply has begun
    logLevel: "off",
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  let inFlight = 0;

  async function attempt(
    body: ChatCompletionCreateParamsStreaming,
    request: ModelRequest,
    progress: StreamProgress,
    timeoutMs: number,
  ) {
    // One controller per HTTP exchange: the turn's signal and the silence timeout both close it.
    const exchange = new AbortController();
    const onAbort = () => exchange.abort(request.signal.reason);
    request.signal.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const arm = () =>
      clock.setTimeout(() => {
        timedOut = true;
        exchange.abort(new Error(`no data from the model server for ${timeoutMs} ms`));
      }, timeoutMs);
    let timer = arm();
    inFlight++;
    try {
      const stream = await client.chat.completions.create(body, { signal: exchange.signal, maxRetries: 0 });
      const reply = await readStream(
        stream,
        {
          ...(request.onDelta ? { onDelta: request.onDelta } : {}),
          onChunk: () => {
            clock.clearTimeout(timer);
            timer = arm();
          },
          fallbackId: (index) => `${request.runId}-c${request.call}-${index + 1}`,
        },
        progress,
      );
      // The SDK ends an aborted stream quietly: what ended it decides the outcome.
      if (request.signal.aborted) throw request.signal.reason;
      if (timedOut) throw exchange.signal.reason;
      return reply;
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      if (timedOut) throw timeoutError(progress, `no data from the model server for ${timeoutMs} ms`);
      throw classifyError(error, progress);
    } finally {
      inFlight--;
      clock.clearTimeout(timer);
      request.signal.removeEventListener("abort", onAbort);
    }
  }

  async function complete(request: ModelRequest): Promise<ModelReply> {
    // The gateway's per-call settings (its `model` config) win over this provider's own options.
    const temperature = request.temperature ?? settings.temperature;
    const maxTokens = request.maxOutputTokens ?? settings.maxTokens;
    const timeoutMs = request.timeoutMs ?? settings.timeoutMs;
    const body: ChatCompletionCreateParamsStreaming = {
      ...settings.extraBody,
      model: settings.model,
      messages: toChatMessages(request.context, {
        system: systemPrompt(settings.system, request),
        notesAs: settings.notesAs,
      }),
      stream: true,
      ...(settings.includeUsage ? { stream_options: { include_usage: true } } : {}),
      ...(request.tools.length > 0 ? { tools: toChatTools(request.tools) } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    } as ChatCompletionCreateParamsStreaming;
    return withRetries(
      request,
      { settings, clock, logger, random: options.random ?? Math.random },
      (progress) => attempt(body, request, progress, timeoutMs),
    );
  }

  return {
    complete,
    get isBusy() {
      return inFlight > 0;
    },
    settings,
  };
}
