import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The node arguments that run a TypeScript entry in a child process. `node --import tsx` compiles on
 * every start (about 0.4 s, seconds on a busy machine); tests that start many processes bundle the
 * entry once with esbuild (tsx's own compiler), so each start costs a plain `node` start. `recheck`,
 * `pino`, `pg`, `grammy` and `@slack/bolt` stay outside the bundle, imported from this repository's
 * node_modules by absolute path (bundled together, grammY's fetch polyfill and Bolt's clash and hang).
 * Falls back to tsx when esbuild cannot be loaded.
 */
export async function nodeEntry(entry: string, outfile: string): Promise<string[]> {
  try {
    const esbuild = await import("esbuild");
    const require = createRequire(join(ROOT, "package.json"));
    await esbuild.build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      logLevel: "silent",
      banner: {
        js: 'import { createRequire as __entryRequire } from "node:module"; const require = __entryRequire(import.meta.url);',
      },
      plugins: [
        {
          name: "repository-externals",
          setup(build) {
            build.onResolve({ filter: /^(recheck|pino|pg|grammy|@slack\/bolt)$/ }, (args) => ({
              path: require.resolve(args.path),
              external: true,
            }));
          },
        },
      ],
    });
    return [outfile];
  } catch {
    return ["--import", "tsx", entry];
  }
}
