import { describe, expect, it } from "vitest";
import { JsonlStore } from "../../src/adapters/jsonl/jsonl-store.js";
import { ScriptedModel, type ScriptedRule } from "../../src/adapters/scripted-model.js";
import type { ModelProvider, ModelRequest } from "../../src/ports/model.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { gatewayOn } from "../support/gateway-on.js";
import { useTempDir } from "../support/temp-dir.js";

// A restart (one process, JSONL store) while a subagent runs: the parent's cut-off turn runs again once
// and starts a new child; the child's cut-off turn is not resumed on its own (nobody waits for its
// final) and nothing of it reaches the user.

const dir = useTempDir("tiller-subagent-restart");

const research: ToolDefinition = {
  name: "research",
  cancellable: true,
  execute: (args, context) => context.runSubagent!({ text: `look up ${String(args.topic)}` }),
};

const rules: ScriptedRule[] = [
  { when: { latestUser: "look up" }, reply: { delayMs: 1000, text: "found: {{latestUser}}" } },
  {
    when: { latestUser: "research", call: 1 },
    reply: { delayMs: 50, toolCalls: [{ name: "research", args: { topic: "tides" } }] },
  },
  { reply: { delayMs: 50, text: "Answer after research" } },
];

function recording(calls: ModelRequest[]) {
  return (clock: ConstructorParameters<typeof ScriptedModel>[1]): ModelProvider => {
    const scripted = new ScriptedModel(rules, clock);
    return {
      complete(request) {
        calls.push(request);
        return scripted.complete(request);
      },
    };
  };
}

/**
 * One process on the JSONL store (shared, as the directory is: the one abandoned never writes again);
 * its model sees the process's own clock.
 */
function processOn(store: JsonlStore, calls: ModelRequest[]) {
  const make = recording(calls);
  let model: ModelProvider | undefined;
  const proc = gatewayOn(store, {
    tools: [research],
    model: { complete: (request) => model!.complete(request) },
  });
  model = make(proc.clock);
  return { ...proc, store };
}

/**
 * Moves the process's clock on in small steps until `done`: the file store's reads are real I/O the
 * simulated clock does not wait for, so running it to idle at once would fire a tool's timeout first.
 */
async function stepUntil(proc: ReturnType<typeof processOn>, done: () => boolean): Promise<void> {
  for (let step = 0; step < 1000 && !done(); step++) {
    await proc.clock.advance(10, () => proc.gateway.isBusy || proc.store.isBusy());
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(done()).toBe(true);
}

describe("a restart while a subagent runs", () => {
  it("runs the parent's turn again with a new child and never resumes the old child on its own", async () => {
    const store = await JsonlStore.openDir({ dir: dir.path });
    const firstCalls: ModelRequest[] = [];
    const first = processOn(store, firstCalls);
    await first.gateway.start();
    expect((await first.send("m1", "please research the tides")).disposition).toBe("started");
    // Mid-child: the child's model call is under way; then the process dies (its clock never moves again).
    await stepUntil(first, () => firstCalls.length === 2);
    expect(firstCalls.map((call) => call.session)).toEqual(["web:1", "web:1:sub:1"]);
    expect(first.channel.sent).toEqual([]);

    const calls: ModelRequest[] = [];
    const second = processOn(store, calls);
    await second.gateway.start();
    await stepUntil(second, () => second.channel.sent.length > 0 && !second.gateway.isBusy);
    await second.clock.advance(5000, () => second.gateway.isBusy || store.isBusy());

    // The parent's turn ran again, once, with a child of its own under a new key.
    expect(calls.map((call) => call.session)).toEqual(["web:1", "web:1:sub:2", "web:1"]);
    expect(second.events.filter((e) => e.type === "subagent.started").map((e) => e.child)).toEqual([
      "web:1:sub:2",
    ]);
    expect(second.channel.sent.map((m) => m.text)).toEqual(["Answer after research"]);
    // The old child ran no model call and delivered nothing; its key stays taken.
    expect(second.events.filter((e) => e.session === "web:1:sub:1" && e.type === "turn.started")).toEqual([]);
    expect(await store.loadState("web:1:sub:1")).toBeNull();
    expect(await store.sessions()).toContain("web:1:sub:1");
    const old = await store.read("web:1:sub:1");
    expect(old.filter((r) => r.role === "assistant")).toEqual([]);
    await second.gateway.stop();
  });
});
