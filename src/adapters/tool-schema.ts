import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { z } from "zod";
import { ConfigError } from "../errors.js";
import type { JsonSchema, ToolDefinition, ToolSpec } from "../ports/tool.js";

/** The schema of a tool that declares no `parameters`: an object with any properties. */
export const OPEN_OBJECT_SCHEMA: JsonSchema = Object.freeze({ type: "object", additionalProperties: true });

/** How many problems one failed check reports: enough to fix a call in one go, short enough to read. */
const MAX_PROBLEMS = 5;

export type ArgsCheck = { ok: true; args: Record<string, unknown> } | { ok: false; problems: string[] };

/** A tool with its schema resolved once: what the model is told, and the check run before `execute`. */
export interface CompiledTool {
  spec: ToolSpec;
  check(args: Record<string, unknown>): ArgsCheck;
}

// One validator per draft for the whole process; each tool's schema is compiled once, at createGateway.
// Tool schemas come from users and from other ecosystems: unknown keywords and formats are annotations,
// not errors (strict: false); a schema that breaks the JSON Schema meta-schema still fails compilation.
let draft07: Ajv | undefined;
let draft2020: Ajv2020 | undefined;

function validatorFor(schema: JsonSchema): Ajv | Ajv2020 {
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  if (dialect.includes("2020-12") || dialect.includes("2019-09")) {
    draft2020 ??= new Ajv2020({ strict: false, allErrors: true, logger: false });
    return draft2020;
  }
  draft07 ??= new Ajv({ strict: false, allErrors: true, logger: false });
  return draft07;
}

/** A zod 4 schema (classic or mini): every one carries `_zod`. */
export function isZodSchema(value: unknown): value is z.ZodType {
  return (
    value !== null &&
    typeof value === "object" &&
    "_zod" in value &&
    typeof (value as { safeParse?: unknown }).safeParse === "function"
  );
}

/**
 * Resolves a tool's `parameters` once: the JSON Schema the model is shown and the argument check.
 * `field` names the tool in a {@link ConfigError} (`tools[2].parameters`).
 *
 * @example
 * ```ts
 * const tool = compileTool({ name: "read", parameters: { type: "object", properties: { path: { type: "string" } } }, ... }, "tools[0]");
 * tool.check({ path: 3 }); // { ok: false, problems: ["args.path: must be string"] }
 * ```
 */
export function compileTool(tool: ToolDefinition, field: string): CompiledTool {
  const description = tool.description ?? "";
  const parameters = tool.parameters;
  if (parameters === undefined) {
    return { spec: { name: tool.name, description, parameters: OPEN_OBJECT_SCHEMA }, check: accept };
  }
  if (isZodSchema(parameters)) return compileZod(tool.name, description, parameters, `${field}.parameters`);
  if (parameters === null || typeof parameters !== "object" || Array.isArray(parameters))
    throw new ConfigError(`${field}.parameters`, "a JSON Schema object or a zod 4 schema", parameters);
  if ("_def" in parameters && "safeParse" in parameters)
    throw new ConfigError(
      `${field}.parameters`,
      "a JSON Schema object or a zod 4 schema (not zod 3)",
      "a zod 3 schema",
    );
  return compileJsonSchema(tool.name, description, parameters as JsonSchema, `${field}.parameters`);
}

function accept(args: Record<string, unknown>): ArgsCheck {
  return { ok: true, args };
}

function compileJsonSchema(
  name: string,
  description: string,
  schema: JsonSchema,
  field: string,
): CompiledTool {
  checkObjectRoot(schema, field);
  let validate: ValidateFunction;
  try {
    validate = validatorFor(schema).compile(schema);
  } catch (error) {
    throw new ConfigError(field, `a valid JSON Schema (${(error as Error).message})`, schema, {
      cause: error,
    });
  }
  return {
    spec: { name, description, parameters: withoutDialect(schema) },
    check(args) {
      if (validate(args)) return { ok: true, args };
      return { ok: false, problems: (validate.errors ?? []).slice(0, MAX_PROBLEMS).map(ajvProblem) };
    },
  };
}

function compileZod(name: string, description: string, schema: z.ZodType, field: string): CompiledTool {
  let json: JsonSchema;
  try {
    // The model writes the input side: fields with defaults are optional to it.
    json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
  } catch (error) {
    throw new ConfigError(
      field,
      `a zod schema with a JSON Schema form (${(error as Error).message})`,
      "a zod schema",
      {
        cause: error,
      },
    );
  }
  checkObjectRoot(json, field);
  return {
    spec: { name, description, parameters: withoutDialect(json) },
    check(args) {
      const parsed = schema.safeParse(args);
      if (parsed.success) return { ok: true, args: parsed.data as Record<string, unknown> };
      return {
        ok: false,
        problems: parsed.error.issues
          .slice(0, MAX_PROBLEMS)
          .map((issue) => `${argsPath(issue.path.map(String))}: ${issue.message}`),
      };
    },
  };
}

/** Tool arguments are a JSON object on every wire format: the root must describe one. */
function checkObjectRoot(schema: JsonSchema, field: string): void {
  if (schema.type !== undefined && schema.type !== "object")
    throw new ConfigError(`${field}.type`, '"object" (tool arguments are an object)', schema.type);
}

/** `$schema` is for validators; some servers refuse it inside a tool definition. */
function withoutDialect(schema: JsonSchema): JsonSchema {
  if (!("$schema" in schema)) return schema;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function ajvProblem(error: ErrorObject): string {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  if (error.keyword === "required" && params.missingProperty)
    return `${argsPath([...path, params.missingProperty])}: is required`;
  if (error.keyword === "additionalProperties" && params.additionalProperty)
    return `${argsPath([...path, params.additionalProperty])}: is not a known argument`;
  return `${argsPath(path)}: ${error.message ?? "is invalid"}`;
}

function argsPath(path: string[]): string {
  return ["args", ...path].join(".");
}

/** A failed check as the tool result the model reads. */
export function invalidArgsResult(problems: string[]): { error: string } {
  return { error: `invalid arguments, the tool did not run: ${problems.join("; ")}` };
}
