import { z } from "zod";
import { expectation } from "../../config.js";
import { ConfigError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../ports/clock.js";

/** Options of {@link createOpenAIModel}; only `baseURL` and `model` are required. */
export interface OpenAIModelOptions {
  /** The server's OpenAI-compatible base URL, up to and including `/v1` (`http://127.0.0.1:8000/v1`). */
  baseURL: string;
  /** Sent as `Authorization: Bearer <key>`. @default none: no Authorization header (local servers) */
  apiKey?: string;
  /** The model name the server knows (`gpt-4o-mini`, `qwen2.5:7b`, ...). */
  model: string;
  /** Extra HTTP headers on every request. @default {} */
  headers?: Record<string, string>;
  /** Retries of a rate-limited or unavailable call, before any of its reply arrived. @default 2 */
  maxRetries?: number;
  /** The longest wait for the server to start answering, and the longest silence within a stream (a local model on a CPU may take a while over a long prompt). @default 120000 */
  timeoutMs?: number;
  /** The clock retries wait on and timeouts run on (a SimulatedClock in tests). @default a SystemClock */
  clock?: Clock;
  /** A system prompt, sent first in every call. @default "" (none) */
  system?: string;
  /** The role of Tiller's notes to the model: `user` for chat templates that refuse a late system message. @default "system" */
  notesAs?: "system" | "user";
  /** Ask for token usage at the end of the stream (`stream_options.include_usage`). @default true */
  includeUsage?: boolean;
  /** Sampling temperature. @default the server's */
  temperature?: number;
  /** `max_tokens` of the reply. @default the server's */
  maxTokens?: number;
  /** Further request body fields for this server (`top_p`, `seed`, ...); Tiller's own fields win. @default {} */
  extraBody?: Record<string, unknown>;
  /** The first retry waits about this long; each further one twice as long. @default 500 */
  retryBaseMs?: number;
  /** The longest wait before a retry; a server asking for a longer `Retry-After` fails the call instead. @default 30000 */
  retryMaxDelayMs?: number;
  /** Source of retry jitter in [0, 1). @default Math.random */
  random?: () => number;
  /** Retries are logged here (`model.retrying`). @default silent */
  logger?: Logger;
  /** The fetch the SDK uses (a proxy agent, a test double). @default globalThis.fetch */
  fetch?: typeof fetch;
}

const schema = z
  .object({
    baseURL: z.url({ protocol: /^https?$/ }),
    apiKey: z.string().optional(),
    model: z.string().min(1),
    headers: z.record(z.string(), z.string()).default({}),
    maxRetries: z.number().int().min(0).max(10).default(2),
    timeoutMs: z.number().int().positive().default(120_000),
    system: z.string().default(""),
    notesAs: z.enum(["system", "user"]).default("system"),
    includeUsage: z.boolean().default(true),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().positive().optional(),
    extraBody: z.record(z.string(), z.unknown()).default({}),
    retryBaseMs: z.number().nonnegative().default(500),
    retryMaxDelayMs: z.number().nonnegative().default(30_000),
  })
  .strict();

/** The options in force, defaults applied; the API key, the headers (they may hold credentials) and the injected objects left out. */
export type OpenAISettings = Omit<z.output<typeof schema>, "apiKey" | "headers">;

type ParsedOptions = OpenAISettings & { headers: Record<string, string> };

/** Validates the options once; a bad one is a ConfigError naming `openai.<field>`. */
export function parseOpenAIOptions(options: OpenAIModelOptions): ParsedOptions {
  if (options === null || typeof options !== "object")
    throw new ConfigError("openai", "an options object { baseURL, model, ... }", options);
  const { clock, logger, fetch, random, ...data } = options;
  for (const [key, value, kind] of [
    ["clock", clock, "object"],
    ["logger", logger, "object"],
    ["fetch", fetch, "function"],
    ["random", random, "function"],
  ] as const) {
    if (value !== undefined && typeof value !== kind)
      throw new ConfigError(`openai.${key}`, kind === "object" ? "an object" : "a function", value);
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.code === "unrecognized_keys" ? issue.keys[0] : issue.path[0];
    throw new ConfigError(
      `openai.${issue.code === "unrecognized_keys" ? String(key) : issue.path.map(String).join(".")}`,
      expectation(issue),
      (data as Record<string, unknown>)[String(key)],
    );
  }
  const { apiKey: _key, ...settings } = parsed.data;
  return settings;
}
