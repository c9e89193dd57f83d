import { compileTool } from "../adapters/tool-schema.js";
import type { ToolDefinition } from "../ports/tool.js";
import type { Scenario } from "../scenario/schema.js";
import type { ScenarioFile } from "./run-path-scenario.js";
import { argumentsFor } from "./schema-arguments.js";
import { UnrealizablePathError } from "./session-path-scenario.js";

type ToolSlot = Scenario["tools"][string];

/**
 * Puts your tools in a generated scenario: each tool the path needs (a cancellable one, one that cannot
 * be cancelled, a read-only one for a review) becomes one of yours of that kind, called by its name with
 * arguments drawn from its schema; its `execute` stays stubbed (the path's duration, result or failure)
 * so the path's timing holds. Every message carries an authority covering your tools' `requires`.
 * Throws an {@link UnrealizablePathError} when the path needs a kind of tool you do not have.
 */
export function withYourTools(file: ScenarioFile, tools: readonly ToolDefinition[], seed = 1): ScenarioFile {
  if (tools.length === 0) throw new UnrealizablePathError("this path calls tools, and the gateway has none");
  const slots = Object.entries(file.tools as Record<string, ToolSlot>);
  const used = new Map<string, number>();
  const renamed = new Map<string, ToolDefinition>();
  const stubs: Record<string, ToolSlot> = {};
  for (const [slot, spec] of slots) {
    const kind = kindOf(spec);
    const fits = tools.filter(
      (tool) => tool.cancellable === spec.cancellable && (!spec.readOnly || tool.readOnly === true),
    );
    if (fits.length === 0)
      throw new UnrealizablePathError(`this path needs ${kind}, and none of the gateway's tools is one`);
    // Spread the path's calls over your tools of that kind; slots that must behave alike share one.
    const start = used.get(kind) ?? 0;
    let chosen: ToolDefinition | undefined;
    for (let offset = 0; offset < fits.length && !chosen; offset++) {
      const candidate = fits[(start + offset) % fits.length]!;
      const stub = stubs[candidate.name];
      if (!stub || sameBehaviour(stub, spec)) chosen = candidate;
    }
    if (!chosen) {
      throw new UnrealizablePathError(
        `this path needs more tools like ${kind.replace(/^an? /, "")} that behave differently than the gateway's ${fits.length}`,
      );
    }
    used.set(kind, start + 1);
    renamed.set(slot, chosen);
    stubs[chosen.name] = {
      ...spec,
      cancellable: chosen.cancellable,
      parameters: compileTool(chosen, `tools.${chosen.name}`).spec.parameters,
      ...(chosen.description !== undefined ? { description: chosen.description } : {}),
      ...(chosen.readOnly !== undefined ? { readOnly: chosen.readOnly } : {}),
      ...(chosen.requires !== undefined ? { requires: [...chosen.requires] } : {}),
    };
  }
  let draws = seed;
  const model = (file.model as Scenario["model"]).map((rule) => {
    if (!rule.reply?.toolCalls) return rule;
    const toolCalls = rule.reply.toolCalls.map((call) => {
      const tool = renamed.get(call.name);
      if (!tool) return call;
      return { name: tool.name, args: argumentsFor(tool, draws++) };
    });
    return { ...rule, reply: { ...rule.reply, toolCalls } };
  });
  const scopes = [...new Set(tools.flatMap((tool) => tool.requires ?? []))];
  const inbound = (file.inbound as Scenario["inbound"]).map((message) =>
    scopes.length === 0 || message.sender || message.trigger
      ? message
      : { ...message, sender: { id: "tester", authority: scopes } },
  );
  return { ...file, tools: stubs, model, inbound };
}

function kindOf(spec: ToolSlot): string {
  if (spec.readOnly) return "a read-only tool";
  return spec.cancellable ? "a cancellable tool" : "a tool that cannot be cancelled";
}

function sameBehaviour(a: ToolSlot, b: ToolSlot): boolean {
  return (
    a.durationMs === b.durationMs &&
    a.error === b.error &&
    JSON.stringify(a.result) === JSON.stringify(b.result) &&
    JSON.stringify(a.subagent) === JSON.stringify(b.subagent)
  );
}
