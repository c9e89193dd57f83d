import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

// The package's declarations as a consumer gets them: built from the sources into a temp dir, next to
// the real package.json (its `exports` and `types`), installed into a strict TypeScript project that
// checks every declaration file (no skipLibCheck) and has only what `npm install` brings: the package's
// `dependencies` and @types/node, none of its dev dependencies (no @types/pg). The project lives outside
// the repository, so nothing of the repository's own node_modules is found by walking up.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const run = promisify(execFile);

let dir = "";
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs tsc; its diagnostics (tsc prints them on stdout) when it fails. */
async function tsc(args: string[]): Promise<string> {
  try {
    await run(process.execPath, [TSC, ...args], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    return "";
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    return `${failed.stdout ?? ""}${failed.stderr ?? ""}` || failed.message;
  }
}

describe("the package's type declarations", () => {
  it("compile in a strict project without skipLibCheck that has only the package's dependencies", async () => {
    dir = await mkdtemp(join(tmpdir(), "tiller-consumer-"));
    const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
      name: string;
      dependencies: Record<string, string>;
    };
    const installed = join(dir, "node_modules", manifest.name);
    const built = await tsc([
      "-p",
      "tsconfig.build.json",
      "--outDir",
      join(installed, "dist"),
      "--emitDeclarationOnly",
      // The repository's typecheck checks the sources; this only writes what a consumer reads.
      "--noCheck",
      "--sourceMap",
      "false",
    ]);
    expect(built).toBe("");
    await cp(join(ROOT, "package.json"), join(installed, "package.json"));
    for (const dependency of [...Object.keys(manifest.dependencies), "@types/node"]) {
      await mkdir(dirname(join(dir, "node_modules", dependency)), { recursive: true });
      await symlink(join(ROOT, "node_modules", dependency), join(dir, "node_modules", dependency), "dir");
    }
    await writeFile(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
    await writeFile(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          types: ["node"],
        },
        files: ["consumer.ts"],
      }),
    );
    // Both entry points, whole: every declaration they reach is checked.
    await writeFile(
      join(dir, "consumer.ts"),
      [
        `import * as tiller from "${manifest.name}";`,
        `import * as testing from "${manifest.name}/testing";`,
        "export type Used = [tiller.Gateway, tiller.PostgresStoreOptions, tiller.AISDKModelOptions, testing.TestGateway];",
        "export const used = [tiller.createGateway, tiller.PostgresStore, tiller.createAISDKModel, testing.createTestGateway];",
        "",
      ].join("\n"),
    );
    expect(await tsc(["-p", dir])).toBe("");
  }, 300_000);
});
