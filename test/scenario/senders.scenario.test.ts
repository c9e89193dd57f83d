import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

// Group chats: each message says who wrote it, a turn acts only with its senders' authority, and one
// person's message never steers into another person's turn unless the configuration allows it.

const ALICE = "{ id: alice, name: Alice, authority: [member, admin] }";
const BOB = "{ id: bob, name: Bob, authority: [member] }";

const run = async (yaml: string) => (await runScenario(parseScenario(yaml, "x.yaml"))).result;

describe("senders in scenarios", () => {
  it("runs another person's message during a tool as its own turn, after the running one", async () => {
    const result = await run(`
tools:
  deploy: { durationMs: 2000, result: deployed }
model:
  - when: { latestUser: "deploy the app", call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: deploy }] }
  - reply: { delayMs: 100, text: "Re: {{latestUser}}" }
inbound:
  - { at: 0, session: "g:1", channel: slack, id: m1, text: "deploy the app", sender: ${ALICE} }
  - { at: 500, session: "g:1", channel: slack, id: m2, text: "what is the weather", sender: ${BOB} }
`);
    const ack = result.acks.find((a) => a.messageId === "m2")!;
    expect(ack.disposition).toBe("queued");
    expect(ack.text).toContain("another person's request is running; yours is next");
    expect(result.events.some((e) => e.type === "steer.injected")).toBe(false);
    // Alice's turn never saw Bob's message; Bob's ran as a turn of its own after it.
    const byRun = new Map<string, Set<string>>();
    for (const call of result.modelCalls) {
      const texts = byRun.get(call.runId) ?? new Set<string>();
      for (const text of call.userTexts) texts.add(text);
      byRun.set(call.runId, texts);
    }
    expect([...byRun.values()].map((texts) => [...texts])).toEqual([
      ["deploy the app"],
      ["what is the weather"],
    ]);
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done"]);
    const users = result.transcripts["g:1"]!.filter((record) => record.role === "user");
    expect(users.map((record) => (record as { sender?: { id: string } }).sender?.id)).toEqual([
      "alice",
      "bob",
    ]);
    // The second turn's model read who wrote each message, fenced as data.
    const bobReply = result.deliveries.find((d) => d.kind === "reply" && d.text.includes("weather"))!;
    expect(bobReply.text).toContain('[message from sender {"id":"bob","name":"Bob"}');
  });

  it("refuses a tool requiring admin in a member's turn and runs it in an admin's", async () => {
    const result = await run(`
tools:
  drop_db: { durationMs: 100, result: dropped, requires: [admin] }
model:
  - when: { call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: drop_db, args: { name: staging } }] }
  - reply: { delayMs: 100, text: "done" }
inbound:
  - { at: 0, session: "g:1", channel: slack, id: m1, text: "drop staging", sender: ${BOB} }
  - { at: 10000, session: "g:1", channel: slack, id: m2, text: "drop staging", sender: ${ALICE} }
`);
    expect(result.toolCalls.map((call) => call.status)).toEqual(["refused", "done"]);
    const refusedEvents = result.events.filter((e) => e.type === "tool.refused");
    expect(refusedEvents).toHaveLength(1);
    expect(refusedEvents[0]).toMatchObject({
      name: "drop_db",
      lacking: [{ sender: "bob", missing: ["admin"] }],
    });
    // The model reads the refusal: who lacks which scope.
    const results = result.transcripts["g:1"]!.filter((record) => record.role === "toolResult");
    expect(JSON.stringify(results[0])).toContain('Bob (bob) lacks \\"admin\\"');
    expect(results[0]).toMatchObject({ status: "failed" });
    expect(results[1]).toMatchObject({ status: "done", result: "dropped" });
  });

  it("narrows a turn's authority before its next tool call when a steer across senders is allowed", async () => {
    const result = await run(`
config: { queue: { steerAcrossSenders: true } }
tools:
  slow_step: { durationMs: 2000, result: stepped }
  drop_db: { durationMs: 100, result: dropped, requires: [admin] }
model:
  - when: { call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: slow_step }] }
  - when: { call: 2 }
    reply: { delayMs: 100, toolCalls: [{ name: drop_db }] }
  - reply: { delayMs: 100, text: "finished" }
inbound:
  - { at: 0, session: "g:1", channel: slack, id: m1, text: "clean up", sender: ${ALICE} }
  - { at: 500, session: "g:1", channel: slack, id: m2, text: "and drop staging", sender: ${BOB} }
`);
    expect(result.acks.find((a) => a.messageId === "m2")!.disposition).toBe("steered");
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([
      ["slow_step", "done"],
      ["drop_db", "refused"],
    ]);
    const second = result.modelCalls.find((call) => call.call === 2)!;
    expect(second.userTexts).toEqual(["clean up", "and drop staging"]);
  });

  it("refuses /stop from someone who does not own the running turn and lacks admin, truthfully", async () => {
    const result = await run(`
tools:
  long_task: { durationMs: 3000, result: finished, cancellable: true }
model:
  - when: { call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: long_task }] }
  - reply: { delayMs: 100, text: "all done" }
inbound:
  - { at: 0, session: "g:1", channel: slack, id: m1, text: "run the long task", sender: ${BOB} }
  - { at: 500, session: "g:1", channel: slack, id: m2, text: "/stop", sender: { id: carol, authority: [member] } }
  - { at: 20000, session: "g:1", channel: slack, id: m3, text: "run the long task", sender: ${BOB} }
  - { at: 20500, session: "g:1", channel: slack, id: m4, text: "/stop", sender: ${ALICE} }
`);
    const refused = result.acks.find((a) => a.messageId === "m2")!;
    expect(refused.disposition).toBe("rejected");
    expect(refused.text).toContain("another person's");
    expect(refused.text).toContain('"admin"');
    expect(refused.text).toContain("nothing was stopped");
    // Bob's first turn ran to its end; Alice (admin) stopped his second.
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done", "cancelled"]);
    expect(result.deliveries.filter((d) => d.kind === "reply").map((d) => d.text)).toEqual(["all done"]);
    expect(result.acks.find((a) => a.messageId === "m4")!.disposition).toBe("control");
  });

  it("keeps a session without senders as it was: tools without requires run, with requires are refused", async () => {
    const result = await run(`
tools:
  plain: { durationMs: 10, result: ok }
  guarded: { durationMs: 10, result: ok, requires: [admin] }
model:
  - when: { call: 1 }
    reply: { toolCalls: [{ name: plain }, { name: guarded }] }
  - reply: { text: "Re: {{latestUser}}" }
inbound:
  - { at: 0, session: "t:1", channel: telegram, id: m1, text: "hello" }
`);
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done", "refused"]);
    expect(result.deliveries.map((d) => d.text)).toEqual(["Re: hello"]);
  });
});
