import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import tools from "../../examples/support-desk/tools.mjs";
import { loadScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";
import { pathsCommand, UsageError } from "../../src/testing/paths-command.js";
import { watchedTools } from "../../src/testing/watched-tools.js";
import { useTempDir } from "../support/temp-dir.js";

// `tiller paths --tools`: scenarios over the author's config and tools, each passing on the real gateway.
const CONFIG = "examples/support-desk/config.json";
const TOOLS = "examples/support-desk/tools.mjs";
const temp = useTempDir("tiller-paths-tools");

async function writtenScenarios(machine: string, extra: string[] = []) {
  const dir = join(temp.path, machine);
  const summary = await pathsCommand([machine, "--out", dir, "--config", CONFIG, "--tools", TOOLS, ...extra]);
  const files = (await readdir(dir)).sort().map((name) => join(dir, name));
  return { summary, files };
}

describe("tiller paths --tools", () => {
  for (const machine of ["session", "run"]) {
    it(`writes ${machine} scenarios that call the desk's tools by name and pass on the real gateway`, async () => {
      const { files } = await writtenScenarios(machine);
      expect(files.length).toBeGreaterThan(5);
      const called = new Set<string>();
      for (const file of files) {
        const scenario = await loadScenario(file);
        for (const name of Object.keys(scenario.tools)) expect(["lookup_order", "refund"]).toContain(name);
        for (const rule of scenario.model)
          for (const call of rule.reply?.toolCalls ?? []) {
            called.add(call.name);
            expect(String(call.args?.order)).toMatch(/^A-[0-9]{4}$/);
          }
        const { result } = await runScenario(scenario);
        const misses = (result.expectations ?? []).filter((expectation) => !expectation.ok);
        expect(misses, file).toEqual([]);
      }
      expect(called.size).toBeGreaterThan(0);
    }, 60_000);
  }

  it("with --run-tools says how to run them, and they pass with the desk's own execute", async () => {
    const { files } = await writtenScenarios("run", ["--run-tools"]);
    expect(await readFile(files[0]!, "utf8")).toContain(`# run with: tiller run `);
    for (const file of files) {
      const problems: string[] = [];
      const { result } = await runScenario(await loadScenario(file), {
        tools: (stubs) => watchedTools(stubs, tools, problems),
      });
      expect(
        (result.expectations ?? []).filter((expectation) => !expectation.ok),
        file,
      ).toEqual([]);
      expect(problems).toEqual([]);
    }
  }, 60_000);

  it("names the flag when the tools file is wrong", async () => {
    await expect(pathsCommand(["run", "--out", temp.path, "--tools", "nope.mjs"])).rejects.toThrow(
      /--tools nope.mjs: cannot load it/,
    );
    await expect(pathsCommand(["run", "--run-tools"])).rejects.toBeInstanceOf(UsageError);
  });
});
