import { z } from "zod";
import { expectation } from "../../config.js";
import { ConfigError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../ports/clock.js";

/**
 * An AI SDK language model (specification v3), as far as the options name it: every `LanguageModelV3`
 * fits. Typed here rather than with `@ai-sdk/provider`'s types, so that the package's declarations
 * compile in a strict project that does not use the AI SDK.
 */
export interface AISDKLanguageModel {
  readonly specificationVersion: "v3";
  readonly provider: string;
  readonly modelId: string;
  /** The streaming call (its options and result are the AI SDK's: any v3 model's fits `never`). */
  doStream(options: never): PromiseLike<unknown>;
}

/** Options of {@link createAISDKModel}; only `model` is required. */
export interface AISDKModelOptions {
  /** An AI SDK language model (specification v3): `anthropic("claude-sonnet-4-5")`, `openai("gpt-4o")`, ... */
  model: AISDKLanguageModel;
  /** A system prompt of this provider, sent before the gateway's instructions. @default "" (none) */
  system?: string;
  /** The role of Tiller's notes to the model: `user` suits every provider (some refuse a system message after the first). @default "user" */
  notesAs?: "system" | "user";
  /** Sampling temperature. @default the provider's */
  temperature?: number;
  /** The longest reply in tokens. @default the provider's */
  maxOutputTokens?: number;
  /** Retries of a rate-limited or unavailable call, before any of its reply arrived. @default 2 */
  maxRetries?: number;
  /** The longest wait for the model to start answering, and the longest silence within its stream. @default 120000 */
  timeoutMs?: number;
  /** The first retry waits about this long; each further one twice as long. @default 500 */
  retryBaseMs?: number;
  /** The longest wait before a retry; a server asking for a longer one fails the call instead. @default 30000 */
  retryMaxDelayMs?: number;
  /** Extra HTTP headers on every request. @default {} */
  headers?: Record<string, string>;
  /** Provider-specific options passed through on every call (`{ anthropic: { ... } }`). @default {} */
  providerOptions?: Record<string, Record<string, unknown>>;
  /** The clock retries wait on and timeouts run on (a SimulatedClock in tests). @default a SystemClock */
  clock?: Clock;
  /** Source of retry jitter in [0, 1). @default Math.random */
  random?: () => number;
  /** Retries are logged here (`model.retrying`). @default silent */
  logger?: Logger;
}

const schema = z
  .object({
    system: z.string().default(""),
    notesAs: z.enum(["system", "user"]).default("user"),
    temperature: z.number().min(0).max(2).optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    maxRetries: z.number().int().min(0).max(10).default(2),
    timeoutMs: z.number().int().positive().default(120_000),
    retryBaseMs: z.number().nonnegative().default(500),
    retryMaxDelayMs: z.number().nonnegative().default(30_000),
    headers: z.record(z.string(), z.string()).default({}),
    providerOptions: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
  })
  .strict();

/** The options in force, defaults applied (the model and the injected objects left out). */
export type AISDKSettings = z.output<typeof schema> & { provider: string; modelId: string };

/** Validates the options once; a bad one is a ConfigError naming `aisdk.<field>`. */
export function parseAISDKOptions(options: AISDKModelOptions, prefix = "aisdk"): AISDKSettings {
  if (options === null || typeof options !== "object")
    throw new ConfigError(prefix, "an options object { model, ... }", options);
  const { model, clock, logger, random, ...data } = options;
  const candidate = model as Partial<AISDKLanguageModel> | undefined;
  if (!candidate || typeof candidate.doStream !== "function")
    throw new ConfigError(`${prefix}.model`, "an AI SDK language model (with doStream)", model);
  if (candidate.specificationVersion !== "v3")
    throw new ConfigError(
      `${prefix}.model`,
      'a language model of specification "v3" (ai 6.x providers)',
      candidate.specificationVersion,
    );
  for (const [key, value, kind] of [
    ["clock", clock, "object"],
    ["logger", logger, "object"],
    ["random", random, "function"],
  ] as const) {
    if (value !== undefined && typeof value !== kind)
      throw new ConfigError(`${prefix}.${key}`, kind === "object" ? "an object" : "a function", value);
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.code === "unrecognized_keys" ? issue.keys[0] : issue.path[0];
    throw new ConfigError(
      `${prefix}.${issue.code === "unrecognized_keys" ? String(key) : issue.path.map(String).join(".")}`,
      expectation(issue),
      (data as Record<string, unknown>)[String(key)],
    );
  }
  return { ...parsed.data, provider: candidate.provider ?? "", modelId: candidate.modelId ?? "" };
}
