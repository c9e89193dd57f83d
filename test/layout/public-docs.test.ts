import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// Every name the package exports carries a doc comment where it is declared, so an editor shows what it is.

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

function undocumentedExports(entry: string): string[] {
  const program = ts.createProgram([entry], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(entry);
  if (!source) throw new Error(`cannot read ${entry}`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error(`${entry} is not a module`);
  const missing: string[] = [];
  for (const exported of checker.getExportsOfModule(moduleSymbol)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const documented = (symbol.declarations ?? []).some(
      (declaration) => ts.getJSDocCommentsAndTags(declaration).length > 0,
    );
    if (!documented) missing.push(exported.getName());
  }
  return missing.sort();
}

describe("the public entry points", () => {
  it("document every export of the package", { timeout: 60_000 }, () => {
    expect(undocumentedExports(join(root, "src/index.ts"))).toEqual([]);
  });

  it("document every export of the testing entry", { timeout: 60_000 }, () => {
    expect(undocumentedExports(join(root, "src/testing/index.ts"))).toEqual([]);
  });
});
