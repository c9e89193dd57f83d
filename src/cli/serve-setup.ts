import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse as parseYaml } from "yaml";
import { type GatewayConfig, parseConfig } from "../config.js";
import { errorMessage } from "../errors.js";
import type { ToolDefinition } from "../ports/tool.js";

/** A command-line problem: one line on stderr, exit status 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Reads `--config FILE` (JSON or YAML, the schema of createGateway's config). */
export async function loadConfigFile(file: string | undefined): Promise<GatewayConfig> {
  if (file === undefined) return parseConfig({});
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`--config ${file}: cannot read it (${errorMessage(error)})`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new UsageError(`--config ${file}: not JSON or YAML (${errorMessage(error).split("\n")[0]})`);
  }
  try {
    return parseConfig(raw ?? {});
  } catch (error) {
    throw new UsageError(`--config ${file}: ${errorMessage(error)}`);
  }
}

/** The longest instructions accepted (config `model.instructions` has the same bound). */
const MAX_INSTRUCTIONS = 200_000;

/** Reads `--instructions FILE`: the system prompt, as UTF-8 text (trailing whitespace dropped). */
export async function loadInstructionsFile(file: string): Promise<string> {
  let text: string;
  try {
    text = (await readFile(file, "utf8")).trimEnd();
  } catch (error) {
    throw new UsageError(`--instructions ${file}: cannot read it (${errorMessage(error)})`);
  }
  if (text.trim() === "")
    throw new UsageError(`--instructions ${file}: the file is empty (expected the system prompt as text)`);
  if (text.length > MAX_INSTRUCTIONS)
    throw new UsageError(
      `--instructions ${file}: expected at most ${MAX_INSTRUCTIONS} characters, received ${text.length}`,
    );
  return text;
}

/** Imports `--tools FILE.mjs`: its default export is an array of tool definitions. */
export async function loadToolsFile(file: string | undefined): Promise<ToolDefinition[]> {
  if (file === undefined) return [];
  let module: { default?: unknown };
  try {
    module = (await import(pathToFileURL(resolve(file)).href)) as { default?: unknown };
  } catch (error) {
    throw new UsageError(`--tools ${file}: cannot load it (${errorMessage(error).split("\n")[0]})`);
  }
  const tools = module.default;
  if (!Array.isArray(tools))
    throw new UsageError(`--tools ${file}: expected a default export that is an array of tool definitions`);
  tools.forEach((tool, index) => {
    if (tool === null || typeof tool !== "object" || typeof (tool as ToolDefinition).name !== "string")
      throw new UsageError(`--tools ${file}: tool [${index}] has no name`);
  });
  return tools as ToolDefinition[];
}

/** Loopback hosts: the only ones served without a token. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

export function parsePort(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535)
    throw new UsageError(`${flag}: expected 0..65535, received ${value}`);
  return n;
}

export function parseMs(value: string | undefined, fallback: number, flag: string): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value))
    throw new UsageError(`${flag}: expected milliseconds (an integer), received ${value}`);
  return Number(value);
}
