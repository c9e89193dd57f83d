import { describe, expect, it } from "vitest";
import { z } from "zod";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { ConfigError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";

// Tools carry schemas: every model call is told each tool's description and JSON Schema, and a call
// whose arguments do not fit is not executed; the model reads which field was wrong and tries again.

/** A model that answers each call with the next reply of its script and keeps every request. */
function scripted(replies: Array<(request: ModelRequest) => ModelReply>) {
  const requests: ModelRequest[] = [];
  const model: ModelProvider = {
    async complete(request) {
      requests.push(request);
      const next = replies[requests.length - 1];
      if (!next) throw new Error(`no reply scripted for call ${requests.length}`);
      return next(request);
    },
  };
  return { model, requests };
}

function setup(model: ModelProvider, tools: ToolDefinition[]) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({ model, tools, channels: { web: channel }, clock, logger: silentLogger });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  return { gateway, channel, events, idle };
}

const readFileSchema = {
  type: "object",
  properties: { path: { type: "string", description: "Workspace-relative path." } },
  required: ["path"],
  additionalProperties: false,
};

function readFileTool(executed: unknown[]): ToolDefinition {
  return {
    name: "read_file",
    description: "Read a text file.",
    parameters: readFileSchema,
    readOnly: true,
    cancellable: true,
    async execute(args) {
      executed.push(args);
      return `contents of ${String(args.path)}`;
    },
  };
}

describe("tool schemas", () => {
  it("tells every model call each tool's description and JSON Schema, built-ins included", async () => {
    const { model, requests } = scripted([() => ({ text: "ok", toolCalls: [] })]);
    const legacy: ToolDefinition = { name: "ping", cancellable: false, execute: async () => "pong" };
    const typed: ToolDefinition = {
      name: "search",
      description: "Search the notes.",
      parameters: z.object({ query: z.string(), limit: z.number().int().default(5) }),
      cancellable: true,
      execute: async () => [],
    };
    const { gateway, idle } = setup(model, [readFileTool([]), legacy, typed]);
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hi" });
    await idle();

    const tools = requests[0]!.tools;
    expect(tools.map((tool) => tool.name)).toEqual(["message", "commitment", "read_file", "ping", "search"]);
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get("read_file")).toEqual({
      name: "read_file",
      description: "Read a text file.",
      parameters: readFileSchema,
    });
    // No parameters: any object, so an existing tool keeps working unchanged.
    expect(byName.get("ping")).toEqual({
      name: "ping",
      description: "",
      parameters: { type: "object", additionalProperties: true },
    });
    // A zod schema is shown as zod's JSON Schema of its input: a defaulted field is optional.
    expect(byName.get("search")?.parameters).toMatchObject({
      type: "object",
      properties: { query: { type: "string" }, limit: { type: "integer", default: 5 } },
      required: ["query"],
    });
    expect(byName.get("search")?.parameters).not.toHaveProperty("$schema");
    expect(byName.get("message")?.parameters).toMatchObject({
      type: "object",
      properties: { action: { const: "send" }, text: { type: "string", minLength: 1 } },
      required: ["action", "text"],
    });
    expect(byName.get("commitment")?.parameters).toMatchObject({
      type: "object",
      properties: { kind: { enum: ["open_loop", "deadline_check", "event_check_in", "care_check_in"] } },
      required: ["kind", "reason", "dedupeKey"],
      additionalProperties: false,
    });
    await gateway.stop();
  });

  it("refuses arguments that do not fit, names the field, and runs the tool once the model corrects them", async () => {
    const executed: unknown[] = [];
    const { model, requests } = scripted([
      () => ({ text: "", toolCalls: [{ callId: "c1", name: "read_file", args: { path: 42, mode: "x" } }] }),
      () => ({ text: "", toolCalls: [{ callId: "c2", name: "read_file", args: { path: "notes.md" } }] }),
      () => ({ text: "The notes say hello.", toolCalls: [] }),
    ]);
    const { gateway, channel, events, idle } = setup(model, [readFileTool(executed)]);
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "what is in notes.md?" });
    await idle();

    // The first call never reached the tool; the second did, with the corrected arguments.
    expect(executed).toEqual([{ path: "notes.md" }]);
    const second = requests[1]!.context.slice(requests[1]!.turnStart);
    const failed = second.find((message) => message.role === "toolResult" && message.callId === "c1");
    expect(failed).toMatchObject({ status: "failed" });
    const error = (failed as { result: { error: string } }).result.error;
    expect(error).toContain("args.path: must be string");
    expect(error).toContain("args.mode: is not a known argument");
    expect(events.find((event) => event.type === "tool.argsInvalid")).toMatchObject({
      callId: "c1",
      name: "read_file",
      problems: expect.arrayContaining(["args.path: must be string", "args.mode: is not a known argument"]),
    });
    const ended = events.filter((event) => event.type === "tool.ended").map((event) => event.status);
    expect(ended).toEqual(["failed", "done"]);
    expect(channel.sent.map((sent) => sent.text)).toEqual(["The notes say hello."]);
    await gateway.stop();
  });

  it("checks a zod schema with zod itself and hands execute the parsed arguments, defaults applied", async () => {
    const executed: unknown[] = [];
    const { model, requests } = scripted([
      () => ({ text: "", toolCalls: [{ callId: "c1", name: "search", args: { query: "" } }] }),
      () => ({ text: "", toolCalls: [{ callId: "c2", name: "search", args: { query: "deploy" } }] }),
      () => ({ text: "Found it.", toolCalls: [] }),
    ]);
    const search: ToolDefinition = {
      name: "search",
      parameters: z.object({ query: z.string().min(1), limit: z.number().int().default(5) }),
      cancellable: true,
      async execute(args) {
        executed.push(args);
        return [];
      },
    };
    const { gateway, idle } = setup(model, [search]);
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "find the deploy notes" });
    await idle();
    expect(executed).toEqual([{ query: "deploy", limit: 5 }]);
    const result = requests[1]!.context.find(
      (message) => message.role === "toolResult" && message.callId === "c1",
    );
    expect(JSON.stringify(result)).toMatch(/args\.query: .*>=1 characters/);
    await gateway.stop();
  });

  it("refuses a tool whose schema is not a valid JSON Schema at createGateway, naming the field", () => {
    const { model } = scripted([]);
    const make = (tool: Partial<ToolDefinition>) => () =>
      createGateway({
        model,
        tools: [{ name: "t", cancellable: false, execute: async () => 1, ...tool } as ToolDefinition],
        channels: { web: new LoopbackChannel() },
      });
    expect(make({ parameters: { type: "object", properties: { a: { type: "strng" } } } })).toThrow(
      /tools\[0\]\.parameters: expected a valid JSON Schema/,
    );
    expect(make({ parameters: { type: "array" } })).toThrow(
      /tools\[0\]\.parameters\.type: expected "object"/,
    );
    expect(make({ parameters: "path: string" as never })).toThrow(ConfigError);
    expect(make({ readOnly: "yes" as never })).toThrow(/tools\[0\]\.readOnly: expected a boolean/);
    expect(make({ description: 7 as never })).toThrow(/tools\[0\]\.description: expected a string/);
  });
});
