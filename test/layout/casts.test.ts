import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// A double cast turns the type checker off for one value; each one left needs a reason at its site.
const MAX_DOUBLE_CASTS = 5;

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) tsFiles(path, out);
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

describe("double casts", () => {
  it(`src has at most ${MAX_DOUBLE_CASTS} 'as unknown as' casts`, () => {
    const sites = tsFiles(join(root, "src")).flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (line.includes("as unknown as") ? [`${relative(root, file)}:${i + 1}`] : [])),
    );
    expect(sites.length, sites.join("\n")).toBeLessThanOrEqual(MAX_DOUBLE_CASTS);
  });
});
