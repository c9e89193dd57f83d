import { execFile } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// What `npm install tiller-gateway` brings: the README's links into docs/ resolve, and the license
// package.json names is there.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

describe("the package tarball", () => {
  it("holds docs/ and an MIT LICENSE", async () => {
    const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
    });
    const files = (JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map(
      (f) => f.path,
    );
    expect(files).toContain("LICENSE");
    expect(files).toContain("docs/cli.md");
    expect(files).toContain("docs/http.md");
  }, 60_000);
});
