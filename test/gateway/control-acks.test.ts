import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

async function run(yaml: string) {
  const { result } = await runScenario(parseScenario(yaml, "control.yaml"));
  const ack = (id: string) => result.acks.find((entry) => entry.messageId === id)!;
  return { result, ack };
}

describe("acks of control commands and interrupts", () => {
  it("acks control commands as control, never as a started turn", async () => {
    const { result, ack } = await run(`
model:
  - reply: { delayMs: 100, text: "ok" }
inbound:
  - { at: 0, session: a, channel: web, id: q, text: "/queue followup" }
  - { at: 10, session: a, channel: web, id: n, text: "/new" }
  - { at: 20, session: a, channel: web, id: s, text: "/stop" }
`);
    for (const id of ["q", "n", "s"]) expect(ack(id).disposition).toBe("control");
    expect(result.modelCalls).toHaveLength(0);
  });

  it("counts the messages of a turn still waiting for its lane when /stop drops them", async () => {
    const { result, ack } = await run(`
config: { lanes: { main: 1 } }
model:
  - reply: { delayMs: 1000, text: "done" }
inbound:
  - { at: 0, session: a, channel: web, id: a1, text: "long job" }
  - { at: 10, session: b, channel: web, id: b1, text: "waits for the lane" }
  - { at: 20, session: b, channel: web, id: b2, text: "/stop" }
`);
    expect(ack("b2").text).toBe("Dropped 1 waiting message(s); nothing was running.");
    expect(result.modelCalls.some((call) => call.session === "b")).toBe(false);
  });

  it("says that /stop waits for a tool that cannot be cancelled", async () => {
    const { ack } = await run(`
model:
  - when: { call: 1 }
    reply: { delayMs: 10, toolCalls: [{ name: deploy }] }
  - reply: { delayMs: 10, text: "deployed" }
tools:
  deploy: { durationMs: 2000, cancellable: false }
inbound:
  - { at: 0, session: a, channel: web, id: a1, text: "deploy it" }
  - { at: 500, session: a, channel: web, id: a2, text: "/stop" }
`);
    expect(ack("a2").text).toBe(
      "Stopping the current reply. deploy cannot be cancelled, so it finishes first.",
    );
  });

  it("names the tool an interrupt cancels", async () => {
    const { result, ack } = await run(`
model:
  - when: { call: 1, latestUser: "search" }
    reply: { delayMs: 10, toolCalls: [{ name: search }] }
  - reply: { delayMs: 10, text: "Re: {{latestUser}}" }
tools:
  search: { durationMs: 2000, cancellable: true }
inbound:
  - { at: 0, session: a, channel: web, id: a1, text: "search the archive" }
  - { at: 500, session: a, channel: web, id: a2, text: "never mind, just say hi", mode: interrupt }
`);
    expect(ack("a2")).toMatchObject({ disposition: "interrupted" });
    expect(ack("a2").text).toContain("cancelling search");
    expect(result.toolCalls.find((call) => call.name === "search")?.status).toBe("cancelled");
  });
});
