import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import type { ScriptedRule } from "../../src/adapters/scripted-model.js";
import { SubagentNumbers } from "../../src/gateway/subagents/subagent-numbers.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { gatewayOn } from "../support/gateway-on.js";

// Subagent sessions: explain() of the parent's message lists them, and their keys are never reused,
// not even by the next process on the same store.

const research: ToolDefinition = {
  name: "research",
  cancellable: true,
  execute: (args, context) => context.runSubagent!({ text: `look up ${String(args.topic)}` }),
};

const rules: ScriptedRule[] = [
  { when: { latestUser: "look up" }, reply: { delayMs: 200, text: "found: {{latestUser}}" } },
  {
    when: { latestUser: "research", call: 1 },
    reply: { delayMs: 50, toolCalls: [{ name: "research", args: { topic: "tides" } }] },
  },
  { reply: { delayMs: 50, text: "Answer after research" } },
];

describe("subagent sessions", () => {
  it("explain() of the parent's message lists the subagent its turn ran, with how it ended", async () => {
    const store = new MemoryStore();
    const { gateway, settle, send } = gatewayOn(store, { rules, tools: [research] });
    await gateway.start();
    await send("m1", "please research the tides");
    await settle();
    const story = gateway.explain("web:1", "m1");
    expect(story?.subagents).toEqual([
      { session: "web:1:sub:1", startedAt: 50, status: "done", endedAt: expect.any(Number) },
    ]);
    expect(story!.subagents![0]!.endedAt).toBeGreaterThanOrEqual(250);
    const child = await store.read("web:1:sub:1");
    expect(child.filter((r) => r.role === "assistant").map((r) => r.text)).toEqual(["found: look up tides"]);
  });

  it("numbers a parent's subagents on from the store after a restart, never reusing a key", async () => {
    const store = new MemoryStore();
    const first = gatewayOn(store, { rules, tools: [research] });
    await first.gateway.start();
    await first.send("m1", "research one");
    await first.settle();
    await first.send("m2", "research two");
    await first.settle();
    await first.gateway.stop();
    expect((await store.sessions()).filter((key) => key.includes(":sub:")).sort()).toEqual([
      "web:1:sub:1",
      "web:1:sub:2",
    ]);
    const before = await store.read("web:1:sub:2");

    const second = gatewayOn(store, { rules, tools: [research] });
    await second.gateway.start();
    await second.send("m3", "research three");
    await second.settle();
    const started = second.events.filter((e) => e.type === "subagent.started").map((e) => e.child);
    expect(started).toEqual(["web:1:sub:3"]);
    expect(second.gateway.explain("web:1", "m3")?.subagents?.map((sub) => sub.session)).toEqual([
      "web:1:sub:3",
    ]);
    // The earlier child's transcript is as it was: nothing of the new child landed in it.
    expect(await store.read("web:1:sub:2")).toEqual(before);
    const third = await store.read("web:1:sub:3");
    expect(third.filter((r) => r.role === "user").map((r) => r.text)).toEqual(["look up tides"]);
  });

  it("numbers a parent taken over from another process on from its children in the store, listing only those", async () => {
    const store = new MemoryStore();
    const listings: Array<string | undefined> = [];
    const sessions = store.sessions.bind(store);
    store.sessions = (prefix?: string) => {
      listings.push(prefix);
      return sessions(prefix);
    };
    await store.open("web:a:sub:1");
    const numbers = new SubagentNumbers(store);
    expect(await numbers.next("web:a")).toBe("web:a:sub:2");
    expect(await numbers.next("web:b")).toBe("web:b:sub:1");
    // web:a ran on another process meanwhile, which made children 3 to 5; this process takes it back.
    for (const n of [3, 4, 5]) await store.open(`web:a:sub:${n}`);
    numbers.forget("web:a");
    expect(await numbers.next("web:a")).toBe("web:a:sub:6");
    expect(await numbers.next("web:b")).toBe("web:b:sub:2");
    // One listing of every key, then one of web:a's children only.
    expect(listings).toEqual([undefined, "web:a:sub:"]);
  });
});
