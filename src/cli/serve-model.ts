import { createAnthropicModel } from "../adapters/anthropic/create-anthropic-model.js";
import { DemoModel, demoTool } from "../adapters/demo-model.js";
import { createOpenAIModel } from "../adapters/openai/create-openai-model.js";
import type { SystemClock } from "../adapters/system-clock.js";
import { errorMessage } from "../errors.js";
import { createLogger } from "../logger.js";
import type { ModelProvider } from "../ports/model.js";
import type { ToolDefinition } from "../ports/tool.js";
import { UsageError } from "./serve-setup.js";

export const PROVIDERS = ["openai", "anthropic"] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface ModelChoice {
  /** `--provider`; absent: `openai` when a URL is given, else the demo model. */
  provider: string | undefined;
  modelUrl: string | undefined;
  modelName: string | undefined;
  /** `--model` was given on the command line (TILLER_MODEL alone does not ask for a real model). */
  modelFlag: boolean;
  env: NodeJS.ProcessEnv;
  clock: SystemClock;
  demoTaskMs: number;
}

export interface ChosenModel {
  model: ModelProvider;
  tools: ToolDefinition[];
  description: string;
  /** A real model was configured (not the demo). */
  real: boolean;
}

/**
 * The model `tiller serve` runs on: `--provider anthropic` (Anthropic's Messages API, the key from
 * `TILLER_MODEL_KEY` or `ANTHROPIC_API_KEY`, `--model-url` its base URL), `openai` when a URL is given
 * (any OpenAI-compatible server, the key from `TILLER_MODEL_KEY` or `OPENAI_API_KEY`), else the demo
 * model and its slow tool.
 */
export function chooseModel(choice: ModelChoice): ChosenModel {
  const { provider, modelUrl, modelName, env, clock } = choice;
  if (provider !== undefined && !(PROVIDERS as readonly string[]).includes(provider))
    throw new UsageError(`--provider: expected one of ${PROVIDERS.join(", ")}, received ${provider}`);
  if (provider === "anthropic") {
    if (modelName === undefined)
      throw new UsageError(
        "--model: required with --provider anthropic (or TILLER_MODEL), such as claude-sonnet-4-5",
      );
    const apiKey = env.TILLER_MODEL_KEY || env.ANTHROPIC_API_KEY || undefined;
    if (apiKey === undefined)
      throw new UsageError("--provider anthropic: no API key; set ANTHROPIC_API_KEY (or TILLER_MODEL_KEY)");
    try {
      const model = createAnthropicModel({
        model: modelName,
        apiKey,
        ...(modelUrl ? { baseURL: modelUrl } : {}),
        clock,
        logger: createLogger(),
      });
      return {
        model,
        tools: [],
        description: `${modelName} on Anthropic's Messages API at ${modelUrl ?? "https://api.anthropic.com"} (with a key)`,
        real: true,
      };
    } catch (error) {
      throw new UsageError(`--provider anthropic: ${errorMessage(error)}`);
    }
  }
  if (modelUrl === undefined) {
    if (provider === "openai")
      throw new UsageError(
        "--provider openai: needs --model-url (or TILLER_MODEL_URL), the server's base URL up to /v1",
      );
    if (choice.modelFlag)
      throw new UsageError(
        "--model: names a model of the server given by --model-url (or TILLER_MODEL_URL), which is not set",
      );
    return {
      model: new DemoModel({ clock }),
      tools: [demoTool({ clock, durationMs: choice.demoTaskMs })],
      description: `DEMO: the built-in scripted demo model, no language model (ask it to "run a task" to see a ${choice.demoTaskMs / 1000} s tool)`,
      real: false,
    };
  }
  if (modelName === undefined)
    throw new UsageError(
      "--model: required with --model-url (or TILLER_MODEL): the name the server knows, such as llama3.2",
    );
  const apiKey = env.TILLER_MODEL_KEY || env.OPENAI_API_KEY || undefined;
  try {
    const model = createOpenAIModel({
      baseURL: modelUrl,
      model: modelName,
      ...(apiKey ? { apiKey } : {}),
      clock,
      logger: createLogger(),
    });
    return {
      model,
      tools: [],
      description: `${modelName} at ${modelUrl} (OpenAI-compatible${apiKey ? ", with a key" : ", no key"})`,
      real: true,
    };
  } catch (error) {
    throw new UsageError(`--model-url ${modelUrl}: ${errorMessage(error)}`);
  }
}
