import { readdir, readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

// Every scenario in examples/ (what `npm run examples` plays) runs, and each of its expectations holds.

const files = (await readdir("examples")).filter((name) => /\.(ya?ml|json)$/.test(name)).sort();

describe("examples/", () => {
  for (const file of files) {
    it(`${file} runs and meets its expectations`, async () => {
      const scenario = parseScenario(await readFile(`examples/${file}`, "utf8"), file);
      const { result, gateway } = await runScenario(scenario);
      await gateway.stop();
      const failed = (result.expectations ?? []).filter((expectation) => !expectation.ok);
      expect(failed).toEqual([]);
      expect(result.acks.length).toBe(scenario.inbound.length);
    });
  }
});
