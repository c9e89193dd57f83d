import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The floors of docs/architecture.md, bottom to top: a file imports only its own floor or lower ones.
const FLOORS: ReadonlyArray<readonly [number, (path: string) => boolean]> = [
  [0, (p) => p === "errors.ts" || p === "logger.ts" || p === "trace-fields.ts"],
  [1, (p) => p.startsWith("ports/")],
  [
    2,
    (p) =>
      p.startsWith("policy/") ||
      p === "config.ts" ||
      p.startsWith("config/") ||
      p === "events.ts" ||
      p.startsWith("events/"),
  ],
  [3, (p) => p.startsWith("adapters/")],
  [4, (p) => p.startsWith("machines/")],
  [5, (p) => p.startsWith("lanes/")],
  [6, (p) => p.startsWith("actors/")],
  [7, (p) => p.startsWith("gateway/")],
];
const TOP = 8;

function floorOf(path: string): number {
  return FLOORS.find(([, matches]) => matches(path))?.[0] ?? TOP;
}

const src = join(dirname(fileURLToPath(import.meta.url)), "../../src");

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith(".ts")) out.push(relative(src, path).split("\\").join("/"));
  }
  return out;
}

// Static and dynamic imports and re-exports, type-only ones included.
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;

/** Every relative import of `file` as a path under src/. */
function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(SPECIFIER)].map((match) =>
    posix.normalize(posix.join(posix.dirname(file), match[1] as string)).replace(/\.js$/, ".ts"),
  );
}

describe("layout", () => {
  const files = sourceFiles(src);

  it("has no import that runs up a floor, type-only imports included", () => {
    const upward: string[] = [];
    for (const file of files) {
      for (const target of importsOf(file, readFileSync(join(src, file), "utf8"))) {
        if (floorOf(target) > floorOf(file))
          upward.push(`${file} (floor ${floorOf(file)}) imports ${target} (floor ${floorOf(target)})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it("sees the imports it checks: the gateway reaches the ports and the machines", () => {
    const root = readFileSync(join(src, "gateway/create-gateway.ts"), "utf8");
    const targets = importsOf("gateway/create-gateway.ts", root);
    expect(targets.some((t) => t.startsWith("machines/"))).toBe(true);
    expect(targets.some((t) => t.startsWith("ports/"))).toBe(true);
    expect(floorOf("ports/store.ts")).toBeLessThan(floorOf("machines/run.machine.ts"));
  });

  it("flags an upward import when one is written", () => {
    const targets = importsOf(
      "policy/example.ts",
      'import type { Ack } from "../gateway/inbound/compose-ack.js";',
    );
    expect(targets).toEqual(["gateway/inbound/compose-ack.ts"]);
    expect(floorOf(targets[0] as string)).toBeGreaterThan(floorOf("policy/example.ts"));
  });
});
