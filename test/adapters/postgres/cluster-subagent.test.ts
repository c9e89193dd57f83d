import { describe, expect, it } from "vitest";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import type { SystemClock } from "../../../src/adapters/system-clock.js";
import type { ModelProvider, ModelRequest } from "../../../src/ports/model.js";
import type { ToolDefinition } from "../../../src/ports/tool.js";
import { useClusteredGateways } from "../../support/clustered-gateway.js";
import { usePostgresSchema } from "../../support/postgres.js";
import { eventually, ownerOf } from "../../support/serve-cluster.js";

// A subagent on a cluster: the child session `<parent>:sub:<n>` is owned, with a fence, by the process
// that runs its parent for as long as the child runs, a message sent to the child on another process
// reaches it there, and a parent that moves between processes never reuses a child's key.

const db = usePostgresSchema("clustersubagent");
const FAST = { leaseMs: 2000, heartbeatMs: 500, pollMs: 100, ackWaitMs: 3000 };
/** No poll during a test: only what a process does on its own (or is woken for) happens. */
const NO_POLL = 60_000;
const clusteredGateway = useClusteredGateways(db);

const delegate: ToolDefinition = {
  name: "delegate",
  cancellable: true,
  execute: (args, context) => context.runSubagent!({ text: `look up ${String(args.topic)}` }),
};

/** The child's tool takes real time: it is mid-turn while the test looks at it. */
function slowLookup(ms: number): ToolDefinition {
  return {
    name: "slow_lookup",
    cancellable: false,
    async execute() {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return "the lookup";
    },
  };
}

/** Parents delegate; children (`…:sub:<n>`) run the slow lookup, then answer with the newest user text. */
function model(clock: SystemClock, calls: ModelRequest[]): ModelProvider {
  const parent = new ScriptedModel(
    [
      { when: { call: 1 }, reply: { toolCalls: [{ name: "delegate", args: { topic: "tides" } }] } },
      { reply: { text: "Answer after research" } },
    ],
    clock,
  );
  const child = new ScriptedModel(
    [
      { when: { call: 1 }, reply: { toolCalls: [{ name: "slow_lookup" }] } },
      { reply: { text: "found: {{latestUser}}" } },
    ],
    clock,
  );
  return {
    complete(request) {
      calls.push(request);
      return (request.session.includes(":sub:") ? child : parent).complete(request);
    },
  };
}

async function processOn(processId: string, options: { lookupMs?: number; pollMs?: number } = {}) {
  const calls: ModelRequest[] = [];
  const started: string[] = [];
  const made = await clusteredGateway(processId, {
    model: (clock) => model(clock, calls),
    tools: [delegate, slowLookup(options.lookupMs ?? 1500)],
    timing: { ...FAST, pollMs: options.pollMs ?? FAST.pollMs },
  });
  made.gateway.subscribe((event) => {
    if (event.type === "subagent.started") started.push(String(event.child));
  });
  await made.gateway.start();
  return { ...made, calls, started };
}

const ask = (id: string, text = "please research the tides", session = "web:p") => ({
  session,
  channel: "web",
  text,
  id,
});

describe("subagents on a cluster", () => {
  it("owns the child session with a fence while it runs, and gives it up after", async () => {
    const a = await processOn("oa", { pollMs: NO_POLL });
    expect((await a.gateway.receive(ask("m1"))).disposition).toBe("started");
    await eventually("the child's tool to run", () => a.calls.some((c) => c.session === "web:p:sub:1"));
    // While the child runs it is A's, with a token its state saves carry (a cluster-wide owner).
    expect(await ownerOf(db, "web:p:sub:1")).toBe("oa");
    expect(a.cluster.ownershipFence("web:p:sub:1")).toMatchObject({ owner: "oa" });
    expect((await a.cluster.owners(["web:p:sub:1"])).get("web:p:sub:1")).toBe("oa");
    await eventually("the parent's reply", () => a.web.sent.some((m) => m.text === "Answer after research"));
    await eventually("the child's ownership to be given up", async () => !(await ownerOf(db, "web:p:sub:1")));
    expect(a.cluster.ownershipFence("web:p:sub:1")).toBeUndefined();
    // The child's final went back to the tool, never to a channel.
    expect(a.web.sent.map((m) => m.text)).toEqual(["Answer after research"]);
  }, 30_000);

  it("routes a message sent to the child on another process to the process running it", async () => {
    const a = await processOn("ra", { pollMs: NO_POLL });
    const b = await processOn("rb", { pollMs: NO_POLL });
    await a.gateway.receive(ask("m1", undefined, "web:r"));
    await eventually("the child's tool to run", () => a.calls.some((c) => c.session === "web:r:sub:1"));
    const ack = await b.gateway.receive({
      ...ask("s1", "also check the moon", "web:r:sub:1"),
      mode: "steer",
    });
    expect(ack).toMatchObject({ disposition: "steered", owner: "ra" });
    await eventually("the parent's reply", () => a.web.sent.some((m) => m.text === "Answer after research"));
    // The steer reached the child's next model call on A; nothing of it ran on B.
    const childCalls = a.calls.filter((c) => c.session === "web:r:sub:1");
    expect(childCalls).toHaveLength(2);
    expect(JSON.stringify(childCalls[1]!.context)).toContain("also check the moon");
    expect(b.calls).toEqual([]);
    expect([...a.web.sent, ...b.web.sent].map((m) => m.text)).toEqual(["Answer after research"]);
  }, 30_000);

  it("applies /stop sent to the child on another process there: the child is cancelled, the parent goes on", async () => {
    const a = await processOn("xa", { pollMs: NO_POLL });
    const b = await processOn("xb", { pollMs: NO_POLL });
    const failures: string[] = [];
    a.gateway.subscribe((event) => {
      if (event.type === "subagent.ended") failures.push(String(event.status));
    });
    await a.gateway.receive(ask("m1", undefined, "web:x"));
    await eventually("the child's tool to run", () => a.calls.some((c) => c.session === "web:x:sub:1"));
    const ack = await b.gateway.receive(ask("x1", "/stop", "web:x:sub:1"));
    expect(ack).toMatchObject({ owner: "xa" });
    await eventually("the parent's reply", () => a.web.sent.some((m) => m.text === "Answer after research"));
    expect(failures).toEqual(["aborted"]);
    // The child never got to its answer; the parent's next model call saw its tool fail.
    expect(a.calls.filter((c) => c.session === "web:x:sub:1")).toHaveLength(1);
    const parentCalls = a.calls.filter((c) => c.session === "web:x");
    expect(JSON.stringify(parentCalls.at(-1)!.context)).toContain("was cancelled");
    expect(b.calls).toEqual([]);
  }, 30_000);

  it("leaves a running child to its process: no other process takes it for an orphan", async () => {
    const a = await processOn("la", { pollMs: NO_POLL });
    // B looks for sessions with work and no live owner all the time.
    const b = await processOn("lb", { pollMs: 50 });
    await a.gateway.receive(ask("m1", undefined, "web:l"));
    await eventually("the parent's reply", () => a.web.sent.some((m) => m.text === "Answer after research"));
    expect(a.calls.filter((c) => c.session === "web:l:sub:1")).toHaveLength(2);
    expect(b.calls).toEqual([]);
    expect(b.web.sent).toEqual([]);
  }, 30_000);

  it("never reuses a child's key when the parent moves between processes", async () => {
    const a = await processOn("na", { lookupMs: 100 });
    const b = await processOn("nb", { lookupMs: 100 });
    const replied = (n: number) => () =>
      [...a.web.sent, ...b.web.sent].filter((m) => m.text === "Answer after research").length === n;
    const free = async () => !(await ownerOf(db, "web:n"));
    await a.gateway.receive(ask("m1", undefined, "web:n"));
    await eventually("the first reply", replied(1));
    await eventually("A to give the parent up", free);
    await b.gateway.receive(ask("m2", undefined, "web:n"));
    await eventually("the second reply", replied(2));
    await eventually("B to give the parent up", free);
    await a.gateway.receive(ask("m3", undefined, "web:n"));
    await eventually("the third reply", replied(3));
    expect([...a.started, ...b.started].sort()).toEqual(["web:n:sub:1", "web:n:sub:2", "web:n:sub:3"]);
    // Each child's transcript holds its own task only.
    for (const n of [1, 2, 3]) {
      const records = await a.store.read(`web:n:sub:${n}`);
      expect(records.filter((r) => r.role === "user")).toHaveLength(1);
    }
  }, 30_000);
});
