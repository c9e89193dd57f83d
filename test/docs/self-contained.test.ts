import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The project speaks only of itself: no tracked file points a reader at documents outside the
// repository. The names are assembled here so that this file does not match itself.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const OUTSIDE = new RegExp(
  [...["DESIGN", "CONTRACTS", "STYLE"].map((name) => `\\b${name}\\.md`), "\\.\\./shared"].join("|"),
);

describe("the repository", () => {
  it("refers to no document outside itself", () => {
    const files = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
      .split("\0")
      .filter((file) => file.length > 0 && !file.endsWith(".png") && file !== "package-lock.json");
    expect(files.length).toBeGreaterThan(50);
    const offending = files.flatMap((file) => {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), "utf8");
      } catch {
        return []; // listed by git but deleted in the working tree
      }
      return text
        .split("\n")
        .flatMap((line, index) => (OUTSIDE.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
    });
    expect(offending).toEqual([]);
  });
});
