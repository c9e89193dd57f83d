import { readdir, readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { loadMachines } from "../../scripts/viz.js";
import { machineShape } from "../../src/viz/machine-shape.js";

// What Stately's editor does with a pasted config: createMachine on the JSON as it is, no implementations.
describe("visualizations/*.json", async () => {
  const machines = await loadMachines("src/machines");
  const files = (await readdir("visualizations")).filter((f) => f.endsWith(".json")).sort();

  it("has one config per machine", () => {
    expect(files).toEqual(machines.map((m) => `${m.machine.id}.json`).sort());
  });

  for (const file of files) {
    it(`${file} loads with createMachine and has the real machine's states and transitions`, async () => {
      const json: unknown = JSON.parse(await readFile(`visualizations/${file}`, "utf8"));
      const loaded = createMachine(json as Parameters<typeof createMachine>[0]);
      const real = machines.find((m) => `${m.machine.id}.json` === file)!.machine;
      const want = machineShape(real);
      const got = machineShape(loaded);
      expect(got.states).toEqual(want.states);
      expect(got.transitions).toEqual(want.transitions);
      expect(want.transitions.length).toBeGreaterThan(0);
    });
  }
});
