import type { LanguageModelV3 } from "@ai-sdk/provider";
import { ConfigError } from "../../errors.js";
import { type AISDKModel, createAISDKModel } from "../ai-sdk/create-ai-sdk-model.js";
import type { AISDKModelOptions } from "../ai-sdk/options.js";

/** Options of {@link createAnthropicModel}: those of `createAISDKModel`, with a model name instead of a model. */
export interface AnthropicModelOptions extends Omit<AISDKModelOptions, "model"> {
  /** The model name Anthropic knows (`claude-sonnet-4-5`, `claude-haiku-4-5`, ...). */
  model: string;
  /** Sent as `x-api-key`. @default the `ANTHROPIC_API_KEY` environment variable, read at each call */
  apiKey?: string;
  /** The server's base URL without `/v1` (a proxy, a test server): requests go to `<baseURL>/v1/messages`. @default https://api.anthropic.com */
  baseURL?: string;
  /** The fetch the provider uses (a proxy agent, a test double). @default globalThis.fetch */
  fetch?: typeof fetch;
}

/**
 * Anthropic's Messages API (streaming, tool use), through the AI SDK's Anthropic provider on
 * {@link createAISDKModel}: the same deltas, tool calls, usage, typed errors and retries as every
 * provider. Tool results go back as `tool_result` blocks (a failed tool's with `is_error`); the
 * gateway's instructions are the `system` prompt.
 *
 * @example
 * ```ts
 * const model = createAnthropicModel({ model: "claude-sonnet-4-5", apiKey: process.env.ANTHROPIC_API_KEY });
 * const gateway = createGateway({ model, channels: { web }, tools, config: { model: { instructions } } });
 * ```
 */
export function createAnthropicModel(options: AnthropicModelOptions): AISDKModel {
  if (options === null || typeof options !== "object")
    throw new ConfigError("anthropic", "an options object { model, apiKey?, baseURL?, ... }", options);
  const { model, apiKey, baseURL, fetch, ...rest } = options;
  if (typeof model !== "string" || model.trim() === "")
    throw new ConfigError("anthropic.model", "a model name such as claude-sonnet-4-5", model);
  if (apiKey !== undefined && typeof apiKey !== "string")
    throw new ConfigError("anthropic.apiKey", "a string", "(not shown)");
  if (baseURL !== undefined && !isHttpUrl(baseURL))
    throw new ConfigError("anthropic.baseURL", "an http(s) URL such as https://api.anthropic.com", baseURL);
  // The provider module is loaded at the first call, so a process that never calls Anthropic (every
  // `tiller` command, every gateway on another model) does not pay for loading it at start.
  let loaded: Promise<LanguageModelV3> | undefined;
  const load = () =>
    (loaded ??= import("@ai-sdk/anthropic").then(({ createAnthropic }) =>
      createAnthropic({
        ...(apiKey ? { apiKey } : {}),
        ...(baseURL ? { baseURL: `${baseURL.replace(/\/+$/, "")}/v1` } : {}),
        ...(fetch ? { fetch } : {}),
      }).languageModel(model),
    ));
  const lazy: LanguageModelV3 = {
    specificationVersion: "v3",
    provider: "anthropic.messages",
    modelId: model,
    supportedUrls: {},
    doGenerate: async (call) => (await load()).doGenerate(call),
    doStream: async (call) => (await load()).doStream(call),
  };
  return createAISDKModel({ ...rest, model: lazy });
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
