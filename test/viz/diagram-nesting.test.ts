import { describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { renderReadmeDiagrams } from "../../scripts/readme-diagrams.js";
import { loadMachines } from "../../scripts/viz.js";
import { toMermaid } from "../../src/viz/mermaid.js";

/**
 * Mermaid draws a compound state as a box only if every edge joins two states declared in the same box;
 * this walks the diagram text and returns each edge that does not.
 */
function edgesLeavingTheirBox(diagram: string): string[] {
  const declared = new Map<string, string>(); // state id → the box it is declared in
  const stack = ["(top)"];
  const edges: Array<{ box: string; from: string; to: string; line: string }> = [];
  for (const raw of diagram.split("\n")) {
    const line = raw.trim();
    const open = /^state (\S+) \{$/.exec(line);
    if (open) {
      declared.set(open[1]!, stack.at(-1)!);
      stack.push(open[1]!);
      continue;
    }
    if (line === "}") {
      stack.pop();
      continue;
    }
    const alias = /^state ".*" as (\S+)$/.exec(line);
    if (alias) declared.set(alias[1]!, stack.at(-1)!);
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(line)) declared.set(line, stack.at(-1)!);
    const edge = /^(\S+) --> (\S+) : /.exec(line);
    if (edge) edges.push({ box: stack.at(-1)!, from: edge[1]!, to: edge[2]!, line });
  }
  return edges
    .filter(({ box, from, to }) => declared.get(from) !== box || declared.get(to) !== box)
    .map(({ line }) => line);
}

describe("Mermaid nesting", () => {
  const machine = createMachine({
    id: "m",
    initial: "a",
    states: {
      a: { initial: "x", states: { x: { on: { OUT: "#m.b" } }, y: {} } },
      b: { on: { IN: "a.y", BACK: "a" } },
    },
  });
  const text = toMermaid(machine);

  it("draws an edge that leaves or enters a box from the box, naming the inner state", () => {
    expect(text).toContain("a --> b : OUT (from x)");
    expect(text).toContain("b --> a : IN (to y)");
    // Entering the box lands in its initial state: nothing to add.
    expect(text).toContain("b --> a : BACK\n");
    expect(edgesLeavingTheirBox(text)).toEqual([]);
  });

  it("keeps every edge of every real machine inside one box, and starts at the real initial state", async () => {
    for (const { machine: real } of await loadMachines("src/machines")) {
      const diagram = toMermaid(real);
      expect(edgesLeavingTheirBox(diagram), real.id).toEqual([]);
      const initial = real.root.initial?.target[0]?.key;
      expect(diagram.split("\n")).toContain(`  [*] --> ${initial}`);
    }
  });

  it("draws the session's turn and the run's toolBatch with their children inside", async () => {
    const machines = await loadMachines("src/machines");
    const run = toMermaid(machines.find((m) => m.machine.id === "run")!.machine);
    expect(run).toMatch(/state toolBatch \{\n(.*\n)*?\s+state "nextTool" as toolBatch__nextTool\n/);
    expect(run).toContain("toolBatch --> streaming : always [steerPending] (from nextTool)");
    const session = toMermaid(machines.find((m) => m.machine.id === "session")!.machine);
    expect(session).toMatch(/state turn \{\n(.*\n)*?\s+state "running" as turn__running\n/);
    expect(session).toContain("turn --> next : deliver done (from delivering)");
    expect(session).toContain("any_state --> resetting : session.new");
  });
});

describe("README diagram blocks", () => {
  it("are regenerated from the machines, without notes", async () => {
    const machines = await loadMachines("src/machines");
    const out = renderReadmeDiagrams("x\n<!-- diagram:run -->\nold\n<!-- /diagram:run -->\ny", machines);
    const run = machines.find((m) => m.machine.id === "run")!.machine;
    expect(out).toBe(
      `x\n<!-- diagram:run -->\n\`\`\`mermaid\n${toMermaid(run, { notes: false })}\`\`\`\n<!-- /diagram:run -->\ny`,
    );
    expect(out).not.toContain("note right of");
  });

  it("refuses a block for a machine that does not exist", async () => {
    const machines = await loadMachines("src/machines");
    expect(() => renderReadmeDiagrams("<!-- diagram:nope -->\n<!-- /diagram:nope -->", machines)).toThrow(
      /unknown machine "nope"/,
    );
  });
});
