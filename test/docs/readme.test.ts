import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { TILLER_ERROR_CODES } from "../../src/errors.js";

// The README is part of the product: its quick start runs as written, and its error table names every
// error code there is.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const run = promisify(execFile);

async function readme(): Promise<string> {
  return readFile(join(ROOT, "README.md"), "utf8");
}

/** The first ```ts block of a `## heading` section. */
function codeBlock(markdown: string, heading: string): string {
  const section = markdown.split(/^## /m).find((part) => part.startsWith(heading));
  const block = section?.match(/```ts\n([\s\S]*?)```/);
  if (!block?.[1]) throw new Error(`README.md has no ts block under "## ${heading}"`);
  return block[1];
}

describe("README.md", () => {
  it("lists every error code in its error table, and no code that does not exist", async () => {
    const section = (await readme()).split(/^## /m).find((part) => part.startsWith("Errors")) ?? "";
    const rows = section.split("\n").filter((line) => /^\| `\w+` \| `[A-Z_]+` \|/.test(line));
    const listed = rows.map((row) => row.split("|")[2]!.trim().replace(/`/g, ""));
    expect([...listed].sort()).toEqual([...TILLER_ERROR_CODES].sort());
  });

  it("has a quick start that runs as written: it subscribes first, and the reply goes out", async () => {
    const { name } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { name: string };
    const source = codeBlock(await readme(), "Quick start");
    expect(source).toContain(`from "${name}"`);
    const dir = await mkdtemp(join(tmpdir(), "tiller-quickstart-"));
    try {
      // The package by its name, mapped to the sources, as a built package would be resolved.
      await writeFile(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            module: "nodenext",
            moduleResolution: "nodenext",
            paths: { [name]: [join(ROOT, "src/index.ts")] },
          },
        }),
      );
      await writeFile(join(dir, "quickstart.mts"), source);
      const tsx = join(ROOT, "node_modules/tsx/dist/cli.mjs");
      const { stdout } = await run(
        process.execPath,
        [tsx, "--tsconfig", join(dir, "tsconfig.json"), "quickstart.mts"],
        {
          cwd: dir,
          timeout: 30_000,
        },
      );
      const lines = stdout.trim().split("\n");
      // Events printed before the ack prove the subscription came first.
      expect(lines.indexOf("gateway.started")).toBeGreaterThanOrEqual(0);
      expect(lines.indexOf("message.acked")).toBeGreaterThan(lines.indexOf("gateway.started"));
      expect(lines.some((line) => line.startsWith("started "))).toBe(true);
      expect(lines).toContain("final.delivered");
      expect(stdout).toContain("[ 'Re: hi' ]");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
