import type { LanguageModelV3, LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { ConfigError, ModelError } from "../../errors.js";
import { type Logger, silentLogger } from "../../logger.js";
import type { Clock } from "../../ports/clock.js";
import { type ModelProvider, type ModelReply, type ModelRequest, systemPrompt } from "../../ports/model.js";
import { withRetries } from "../openai/backoff.js";
import { timeoutError } from "../openai/classify-error.js";
import type { StreamProgress } from "../openai/read-stream.js";
import { SystemClock } from "../system-clock.js";
import { classifyAISDKError } from "./classify-error.js";
import {
  type AISDKLanguageModel,
  type AISDKModelOptions,
  type AISDKSettings,
  parseAISDKOptions,
} from "./options.js";
import { readParts } from "./read-parts.js";
import { toPrompt, toTools } from "./to-prompt.js";

/** An AI SDK model behind the model port, with a view of its own calls. */
export interface AISDKModel extends ModelProvider {
  /** True while a call to the model is in flight (not while waiting to retry): lets a simulated clock wait. */
  readonly isBusy: boolean;
  /** The options in force, defaults applied, with the model's provider and id. */
  readonly settings: Readonly<AISDKSettings>;
}

/**
 * The model port on any AI SDK language model (specification v3: Anthropic, OpenAI, Google, Bedrock,
 * Mistral, Ollama, ... providers of `ai` 6.x). Every call streams (`doStream`): text reaches `onDelta`
 * as it arrives, tool calls carry their JSON Schemas to the model and come back whole, the finish
 * reason and usage are reported. The request's signal aborts the call at once. Failures are typed
 * ({@link ModelError}) with the codes of the OpenAI-compatible provider; rate limits and unavailability
 * are retried with backoff and jitter on the given clock, honouring `Retry-After`, only while nothing
 * of the reply has arrived (the AI SDK's own retries live in `generateText`, not in the model, so none
 * run twice).
 *
 * @example
 * ```ts
 * import { createAnthropic } from "@ai-sdk/anthropic";
 * const model = createAISDKModel({ model: createAnthropic()("claude-sonnet-4-5"), temperature: 0.3 });
 * const gateway = createGateway({ model, channels: { web }, tools });
 * ```
 */
export function createAISDKModel(options: AISDKModelOptions): AISDKModel {
  const settings = parseAISDKOptions(options);
  // parseAISDKOptions has checked the model; the options type names only what a caller must pass.
  const candidate = options.model;
  if (!isLanguageModelV3(candidate))
    throw new ConfigError("model", "an AI SDK language model (v3)", candidate);
  const model: LanguageModelV3 = candidate;
  const clock: Clock = options.clock ?? new SystemClock();
  const logger: Logger = options.logger ?? silentLogger;
  let inFlight = 0;

  async function attempt(
    call: LanguageModelV3CallOptions,
    request: ModelRequest,
    progress: StreamProgress,
    timeoutMs: number,
  ): Promise<ModelReply> {
    // One controller per exchange: the turn's signal and the silence timeout both end it.
    const exchange = new AbortController();
    const onAbort = () => exchange.abort(request.signal.reason);
    request.signal.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const arm = () =>
      clock.setTimeout(() => {
        timedOut = true;
        exchange.abort(new Error(`no data from the model for ${timeoutMs} ms`));
      }, timeoutMs);
    let timer = arm();
    inFlight++;
    try {
      const { stream } = await raceAbort(
        model.doStream({ ...call, abortSignal: exchange.signal }),
        exchange.signal,
      );
      const reply = await raceAbort(
        readParts(
          stream,
          {
            ...(request.onDelta ? { onDelta: request.onDelta } : {}),
            onPart: () => {
              clock.clearTimeout(timer);
              timer = arm();
            },
          },
          progress,
        ),
        exchange.signal,
      );
      if (request.signal.aborted) throw request.signal.reason;
      if (timedOut) throw exchange.signal.reason;
      return reply;
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      if (timedOut) throw timeoutError(progress, `no data from the model for ${timeoutMs} ms`);
      throw classifyAISDKError(error, progress);
    } finally {
      inFlight--;
      clock.clearTimeout(timer);
      request.signal.removeEventListener("abort", onAbort);
      if (!exchange.signal.aborted) exchange.abort(new Error("the model call ended"));
    }
  }

  async function complete(request: ModelRequest): Promise<ModelReply> {
    const temperature = request.temperature ?? settings.temperature;
    const maxOutputTokens = request.maxOutputTokens ?? settings.maxOutputTokens;
    const call: LanguageModelV3CallOptions = {
      prompt: toPrompt(request.context, {
        system: systemPrompt(settings.system, request),
        notesAs: settings.notesAs,
      }),
      ...(request.tools.length > 0 ? { tools: toTools(request.tools), toolChoice: { type: "auto" } } : {}),
      ...(temperature !== undefined ? { temperature } : {}),
      ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
      ...(Object.keys(settings.headers).length > 0 ? { headers: settings.headers } : {}),
      ...(Object.keys(settings.providerOptions).length > 0
        ? { providerOptions: settings.providerOptions as LanguageModelV3CallOptions["providerOptions"] }
        : {}),
    };
    const timeoutMs = request.timeoutMs ?? settings.timeoutMs;
    return withRetries(
      request,
      { settings, clock, logger, random: options.random ?? Math.random },
      (progress) => attempt(call, request, progress, timeoutMs),
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

/**
 * The promise, or a rejection as soon as `signal` aborts: a model that does not watch its abort signal
 * (a stream that never ends) cannot hold the turn.
 */
function raceAbort<T>(promise: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(promise).then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** A v3 language model: what the public options type leaves out is the AI SDK's own call contract. */
function isLanguageModelV3(model: AISDKLanguageModel): model is LanguageModelV3 {
  return model.specificationVersion === "v3" && typeof model.doStream === "function";
}
