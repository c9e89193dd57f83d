// What the scripts that generate docs/ share: a type checker over one source file, and writing the
// generated text or (`--check`) failing when the file on disk differs from it.
import { readFileSync, writeFileSync } from "node:fs";
import ts from "typescript";

/** The type checker and the parsed source of `file` (with what it imports). */
export function checkerFor(file: string): { checker: ts.TypeChecker; sourceFile: ts.SourceFile } {
  const program = ts.createProgram([file], {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
  });
  const sourceFile = program.getSourceFile(file);
  if (!sourceFile) throw new Error(`cannot read ${file}`);
  return { checker: program.getTypeChecker(), sourceFile };
}

/** Writes `text` to `target`, or with `--check` exits 1 when `target` holds something else. */
export function writeOrCheck(target: string, text: string, source: string, summary: string): void {
  const name = target.slice(target.lastIndexOf("docs/"));
  if (!process.argv.includes("--check")) {
    writeFileSync(target, text);
    console.log(`wrote ${name} (${summary})`);
    return;
  }
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // A missing file is drift too.
  }
  if (current !== text) {
    console.error(`${name} is out of date with ${source}: run \`npm run docs\``);
    process.exit(1);
  }
}
