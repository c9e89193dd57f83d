import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { machinePaths } from "../../src/testing/machine-paths.js";
import { scenarioForPath } from "../../src/testing/replay-path.js";
import { type PathTestContext, testPaths } from "../../src/testing/test-paths.js";

// A gateway author's own tools: one that can be stopped, one that cannot and needs a scope.
const calls: Array<{ name: string; args: Record<string, unknown> }> = [];
const tools: ToolDefinition[] = [
  {
    name: "lookup_order",
    description: "Find an order by number.",
    parameters: z.object({ order: z.string().regex(/^A-\d{4}$/), verbose: z.boolean().optional() }),
    cancellable: true,
    execute: async (args) => {
      calls.push({ name: "lookup_order", args });
      return "shipped";
    },
  },
  {
    name: "refund",
    parameters: {
      type: "object",
      properties: {
        order: { type: "string", minLength: 3 },
        cents: { type: "integer", minimum: 1, maximum: 5000 },
      },
      required: ["order", "cents"],
      additionalProperties: false,
    },
    requires: ["payments"],
    cancellable: false,
    execute: async (args) => {
      calls.push({ name: "refund", args });
      return "refunded";
    },
  },
];
const config = { staleReplyRecheck: { maxPasses: 1 } };

describe("every session path with the documented pattern, config only", () => {
  testPaths(it, machinePaths("session", { config }), { config });
});

describe("every session path with your tools", () => {
  testPaths(it, machinePaths("session", { config }), { config, tools });
});

describe("every run path with your tools", () => {
  testPaths(it, machinePaths("run", { config }), { config, tools });
});

describe("every commitment path with your tools", () => {
  testPaths(it, machinePaths("commitment", { config }), { config, tools });
});

describe("paths with your tools", () => {
  it("calls your tools by name with arguments valid under their schemas, and a scope for requires", () => {
    const paths = machinePaths("run", { config });
    const names = new Set<string>();
    for (const path of paths) {
      const file = scenarioForPath(path, config, tools);
      for (const rule of file.model) {
        for (const call of rule.reply?.toolCalls ?? []) {
          names.add(call.name);
          if (call.name === "lookup_order") expect(call.args?.order).toMatch(/^A-\d{4}$/);
          if (call.name === "refund") {
            expect(call.args).toEqual({ order: expect.any(String), cents: expect.any(Number) });
            expect(Number.isInteger(call.args?.cents)).toBe(true);
          }
        }
      }
      for (const message of file.inbound) expect(message.sender?.authority).toEqual(["payments"]);
    }
    expect([...names].sort()).toEqual(["lookup_order", "refund"]);
  });

  it("skips, with the reason, a path that needs a kind of tool the gateway lacks", async () => {
    const registered: Array<{ name: string; body: (context: PathTestContext) => Promise<void> }> = [];
    const onlyCancellable = tools.filter((tool) => tool.cancellable);
    testPaths((name, body) => registered.push({ name, body }), machinePaths("session", { config }), {
      config,
      tools: onlyCancellable,
    });
    const notes: string[] = [];
    for (const test of registered) await test.body({ skip: (note) => notes.push(note ?? "") });
    expect(notes).toContain(
      "the gateway cannot take this path: this path needs a tool that cannot be cancelled, and none of the gateway's tools is one",
    );
  });

  it("runs your tools' own execute with runTools", async () => {
    calls.length = 0;
    const registered: Array<(context: PathTestContext) => Promise<void>> = [];
    const [path] = machinePaths("run", { config }).filter((candidate) =>
      candidate.name.includes("the model asks for tools"),
    );
    testPaths((_, body) => registered.push(body), [path!], { config, tools, runTools: true });
    await registered[0]!({});
    expect(calls.map((call) => call.name).sort()).toContain("lookup_order");
  });
});
