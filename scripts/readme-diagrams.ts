/**
 * Keeps the machine diagrams in README.md generated: each block between `<!-- diagram:ID -->` and
 * `<!-- /diagram:ID -->` holds the Mermaid diagram of the machine with that id, rendered by the same
 * code as `visualizations/ID.mmd` (without notes, so it stays compact on the page).
 */

import { toMermaid } from "../src/viz/mermaid.js";
import type { LoadedMachine } from "./viz.js";

const BLOCK = /<!-- diagram:([A-Za-z0-9._-]+) -->\n[\s\S]*?<!-- \/diagram:\1 -->/g;

/**
 * The README text with every diagram block regenerated. Throws when a block names an unknown machine.
 *
 * @example
 * ```ts
 * renderReadmeDiagrams("<!-- diagram:run -->\n<!-- /diagram:run -->", machines);
 * // "<!-- diagram:run -->\n```mermaid\nstateDiagram-v2 …```\n<!-- /diagram:run -->"
 * ```
 */
export function renderReadmeDiagrams(readme: string, machines: readonly LoadedMachine[]): string {
  return readme.replace(BLOCK, (_block, id: string) => {
    const found = machines.find((loaded) => loaded.machine.id === id);
    if (!found) throw new Error(`README.md has a diagram block for unknown machine "${id}".`);
    const diagram = toMermaid(found.machine, { notes: false });
    return `<!-- diagram:${id} -->\n\`\`\`mermaid\n${diagram}\`\`\`\n<!-- /diagram:${id} -->`;
  });
}
