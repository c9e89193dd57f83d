import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { compileTool } from "../adapters/tool-schema.js";
import { checkPattern, expectation, parseConfig } from "../config.js";
import { ConfigError, TillerError } from "../errors.js";
import { type Scenario, scenarioSchema } from "./schema.js";

/** An invalid scenario file: the message names the field, what was expected and what was found. */
export class ScenarioError extends TillerError {
  constructor(
    readonly file: string,
    readonly field: string,
    detail: string,
  ) {
    super("CONFIG_INVALID", `${file}: ${field}: ${detail}`);
  }
}

/** Reads and validates a scenario (YAML or JSON). */
export async function loadScenario(file: string): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new ScenarioError(file, "(file)", `cannot be read: ${(error as Error).message}`);
  }
  return parseScenario(text, file);
}

/** Parses and checks a scenario file's text; errors name the field. */
export function parseScenario(text: string, file = "scenario"): Scenario {
  if (text.trim().length === 0)
    throw new ScenarioError(file, "(file)", "expected a scenario (YAML or JSON), found an empty file");
  let raw: unknown;
  try {
    raw = file.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ScenarioError(file, "(syntax)", (error as Error).message.split("\n")[0] ?? "unreadable");
  }
  const result = scenarioSchema.safeParse(raw ?? {});
  if (!result.success) {
    // Every problem at once, each naming its field.
    const problems = result.error.issues.map((issue) => {
      const field = issue.path
        .map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`))
        .join("")
        .replace(/^\./, "");
      let found: unknown = raw;
      for (const part of issue.path)
        found =
          found && typeof found === "object" ? (found as Record<PropertyKey, unknown>)[part] : undefined;
      return {
        field: field || "(root)",
        detail: `expected ${expectation(issue)}, found ${JSON.stringify(found) ?? "nothing"}`,
      };
    });
    const [first] = problems;
    if (problems.length === 1) throw new ScenarioError(file, first!.field, first!.detail);
    throw new ScenarioError(
      file,
      first!.field,
      `${first!.detail}; and ${problems
        .slice(1)
        .map((problem) => `${problem.field}: ${problem.detail}`)
        .join("; ")}`,
    );
  }
  try {
    parseConfig(result.data.config ?? {}, "config");
    // A tool's schema is compiled as the gateway will compile it, so a bad one is a scenario error.
    for (const [name, tool] of Object.entries(result.data.tools))
      compileTool(
        { name, cancellable: tool.cancellable, execute: async () => null, ...schemaOf(tool) },
        `tools.${name}`,
      );
    for (const [index, delivery] of (result.data.expect?.deliveries ?? []).entries()) {
      if (delivery.textMatches !== undefined)
        checkPattern(`expect.deliveries[${index}].textMatches`, delivery.textMatches);
    }
  } catch (error) {
    if (error instanceof ConfigError) {
      const [first, ...rest] = error.problems;
      const detail = (problem: { field: string; message: string }) =>
        problem.message.slice(problem.field.length + 2);
      throw new ScenarioError(
        file,
        first!.field,
        [detail(first!), ...rest.map((problem) => `${problem.field}: ${detail(problem)}`)].join("; and "),
      );
    }
    throw error;
  }
  return result.data;
}

function schemaOf(tool: { parameters?: Record<string, unknown> | undefined }): {
  parameters?: Record<string, unknown>;
} {
  return tool.parameters === undefined ? {} : { parameters: tool.parameters };
}
