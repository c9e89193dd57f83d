import fc from "fast-check";
import { compileTool } from "../adapters/tool-schema.js";
import type { JsonSchema, ToolDefinition } from "../ports/tool.js";

/** A tool's schema uses a keyword the argument generator cannot honour, so its arguments cannot be made. */
export class UnsupportedSchemaError extends Error {}

/**
 * A fast-check arbitrary for the values a JSON Schema accepts: `type`, `properties`/`required`,
 * `items`/`minItems`/`maxItems`, `enum`, `const`, `anyOf`/`oneOf`, string and number bounds, `$ref` into
 * `$defs`/`definitions`. Optional properties are sometimes left out, as a model would.
 */
export function schemaArbitrary(
  schema: JsonSchema,
  root: JsonSchema = schema,
  depth = 0,
): fc.Arbitrary<unknown> {
  if (depth > 8) return fc.constant(null);
  if (typeof schema.$ref === "string") return schemaArbitrary(resolveRef(schema.$ref, root), root, depth + 1);
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const union = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(union)) return fc.oneof(...union.map((part) => schemaArbitrary(part, root, depth + 1)));
  if (Array.isArray(schema.allOf)) {
    const merged = Object.assign({}, ...(schema.allOf as JsonSchema[]), { allOf: undefined });
    return schemaArbitrary(merged, root, depth + 1);
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  const type = types.find((candidate) => candidate !== "null") ?? types[0] ?? guessType(schema);
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = new Set((schema.required ?? []) as string[]);
      const shape = Object.fromEntries(
        Object.entries(properties).map(([key, part]) => [key, schemaArbitrary(part, root, depth + 1)]),
      );
      return fc.record(shape, { requiredKeys: [...required].filter((key) => key in properties) });
    }
    case "array": {
      const items = (schema.items ?? {}) as JsonSchema;
      return fc.array(schemaArbitrary(items, root, depth + 1), {
        minLength: (schema.minItems as number | undefined) ?? 0,
        maxLength: Math.max(
          (schema.maxItems as number | undefined) ?? 3,
          (schema.minItems as number | undefined) ?? 0,
        ),
      });
    }
    case "string": {
      if (schema.pattern !== undefined) {
        return fc.stringMatching(new RegExp(schema.pattern as string));
      }
      if (schema.format !== undefined && schema.format !== "") return formatArbitrary(String(schema.format));
      const minLength = (schema.minLength as number | undefined) ?? 1;
      return fc.string({
        unit: "grapheme-ascii",
        minLength,
        maxLength: (schema.maxLength as number | undefined) ?? Math.max(minLength, 12),
      });
    }
    case "integer":
    case "number": {
      const min =
        (schema.minimum as number | undefined) ??
        (typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : 0);
      const max =
        (schema.maximum as number | undefined) ??
        (typeof schema.exclusiveMaximum === "number" ? schema.exclusiveMaximum - 1 : Math.max(min, 0) + 1000);
      return fc.integer({ min: Math.ceil(min), max: Math.floor(max) });
    }
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      return fc.constant("x");
  }
}

/**
 * Arguments for a call of `tool`, valid under its `parameters` (a JSON Schema or a zod schema), drawn
 * with fast-check from `seed` so a path always calls the tool with the same arguments. Each draw is
 * checked with the gateway's own argument check; a schema the generator cannot satisfy in 50 draws
 * throws an {@link UnsupportedSchemaError} naming the tool.
 */
export function argumentsFor(tool: ToolDefinition, seed: number): Record<string, unknown> {
  const compiled = compileTool(tool, `tools.${tool.name}`);
  const arbitrary = schemaArbitrary(compiled.spec.parameters);
  for (const [index, value] of fc.sample(arbitrary, { seed, numRuns: 50 }).entries()) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) continue;
    if (compiled.check(value as Record<string, unknown>).ok) return value as Record<string, unknown>;
    if (index === 49) break;
  }
  throw new UnsupportedSchemaError(
    `tools.${tool.name}.parameters: no arguments drawn in 50 tries fit the schema; give the tool a simpler schema or run it with your own scenario`,
  );
}

function resolveRef(ref: string, root: JsonSchema): JsonSchema {
  const parts = ref.replace(/^#\//, "").split("/");
  let node: unknown = root;
  for (const part of parts) node = (node as Record<string, unknown> | undefined)?.[part];
  if (typeof node !== "object" || node === null)
    throw new UnsupportedSchemaError(`$ref ${ref} does not resolve`);
  return node as JsonSchema;
}

function guessType(schema: JsonSchema): string {
  if (schema.properties) return "object";
  if (schema.items) return "array";
  return "string";
}

function formatArbitrary(format: string): fc.Arbitrary<string> {
  if (format === "email") return fc.emailAddress();
  if (format === "uri" || format === "url") return fc.webUrl();
  if (format === "uuid") return fc.uuid();
  if (format === "date-time")
    return fc
      .date({ min: new Date(0), max: new Date(4102444800000), noInvalidDate: true })
      .map((date) => date.toISOString());
  if (format === "date")
    return fc
      .date({ min: new Date(0), max: new Date(4102444800000), noInvalidDate: true })
      .map((date) => date.toISOString().slice(0, 10));
  return fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 12 });
}
