import { ConfigError } from "../errors.js";
import type { Channel } from "../ports/channel.js";
import type { ModelProvider } from "../ports/model.js";
import type { ToolDefinition } from "../ports/tool.js";

/**
 * Checks the adapters handed to `createGateway` before anything runs, so a wiring mistake is a
 * `ConfigError` naming the option at start-up rather than a failed turn later: the model has
 * `complete`, every channel `send`, every tool a unique name (the built-in `message` and `commitment`
 * included), an `execute` function and, if given, a boolean `cancellable` and `readOnly` and a string
 * `description` (`parameters` are checked when they are compiled).
 *
 * @example
 * ```ts
 * checkAdapters({ model, channels: { web }, tools: [lookup] }, ["message", "commitment"]);
 * ```
 */
export function checkAdapters(
  options: { model: ModelProvider; channels: Record<string, Channel>; tools?: ToolDefinition[] },
  builtinNames: readonly string[],
): void {
  const { model, channels, tools } = options;
  if (typeof (model as Partial<ModelProvider> | undefined)?.complete !== "function")
    throw new ConfigError("model", "an object with a complete(request) method", model);
  if (channels === null || typeof channels !== "object" || Object.keys(channels).length === 0)
    throw new ConfigError("channels", "at least one channel", channels);
  for (const [name, channel] of Object.entries(channels)) {
    if (typeof (channel as Partial<Channel> | undefined)?.send !== "function")
      throw new ConfigError(`channels.${name}`, "an object with a send(message) method", channel);
  }
  if (tools === undefined) return;
  if (!Array.isArray(tools)) throw new ConfigError("tools", "an array of tool definitions", tools);
  const names = new Set(builtinNames);
  tools.forEach((tool, index) => {
    const field = `tools[${index}]`;
    if (tool === null || typeof tool !== "object") throw new ConfigError(field, "a tool definition", tool);
    if (typeof tool.name !== "string" || tool.name.length === 0)
      throw new ConfigError(`${field}.name`, "a non-empty string", tool.name);
    if (names.has(tool.name))
      throw new ConfigError(
        `${field}.name`,
        `a name no other tool has (${[...names].join(", ")} are taken)`,
        tool.name,
      );
    names.add(tool.name);
    if (typeof tool.execute !== "function")
      throw new ConfigError(
        `${field}.execute`,
        "a function (args, context) => Promise<result>",
        tool.execute,
      );
    if (tool.cancellable !== undefined && typeof tool.cancellable !== "boolean")
      throw new ConfigError(`${field}.cancellable`, "a boolean", tool.cancellable);
    if (tool.description !== undefined && typeof tool.description !== "string")
      throw new ConfigError(`${field}.description`, "a string", tool.description);
    if (tool.readOnly !== undefined && typeof tool.readOnly !== "boolean")
      throw new ConfigError(`${field}.readOnly`, "a boolean", tool.readOnly);
    if (
      tool.requires !== undefined &&
      !(Array.isArray(tool.requires) && tool.requires.every((s) => typeof s === "string" && s.length > 0))
    )
      throw new ConfigError(`${field}.requires`, "an array of scope names", tool.requires);
  });
}
