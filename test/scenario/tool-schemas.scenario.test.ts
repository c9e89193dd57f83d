import { describe, expect, it } from "vitest";
import { parseScenario, ScenarioError } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

// A scenario's tools may declare a JSON Schema: a call that does not fit fails without running, the
// model reads which argument was wrong, and its corrected call runs.

const SCENARIO = `
name: the model corrects a call the schema refused
tools:
  write_file:
    durationMs: 100
    result: written
    description: Write a file of the workspace.
    parameters:
      type: object
      properties: { path: { type: string }, text: { type: string } }
      required: [path]
      additionalProperties: false
model:
  - when: { call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: write_file, args: { file: checklist.md } }] }
  - when: { call: 2, hasToolResult: write_file }
    reply: { delayMs: 100, toolCalls: [{ name: write_file, args: { path: checklist.md } }] }
  - reply: { delayMs: 100, text: "Written: checklist.md." }
inbound:
  - { at: 0, session: "telegram:1", channel: telegram, id: m1, text: "write the checklist" }
`;

describe("tool schemas in scenarios", () => {
  it("fails the misfit call without running it and runs the corrected one", async () => {
    const { result } = await runScenario(parseScenario(SCENARIO, "x.yaml"));
    expect(result.toolCalls.map((call) => [call.status, call.args])).toEqual([
      ["failed", { file: "checklist.md" }],
      ["done", { path: "checklist.md" }],
    ]);
    const refused = result.transcripts["telegram:1"]!.find((record) => record.role === "toolResult");
    expect(JSON.stringify(refused)).toContain("args.path: is required");
    expect(JSON.stringify(refused)).toContain("args.file: is not a known argument");
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual(["Written: checklist.md."]);
  });

  it("refuses a scenario whose tool schema is not valid JSON Schema, naming the tool", () => {
    const broken = SCENARIO.replace("type: object", "type: objekt");
    expect(() => parseScenario(broken, "x.yaml")).toThrow(ScenarioError);
    expect(() => parseScenario(broken, "x.yaml")).toThrow(/tools\.write_file\.parameters\.type/);
  });
});
