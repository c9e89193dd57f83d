import { describe, expect, it } from "vitest";
import { eventsOf, play } from "../support/scenario.js";

// A message steered into a run that is already writing its final text, with the re-check off: the run
// ends without it and it becomes its own turn. The ack said `steered` before the outcome was known;
// afterwards the gateway says what happened (`steer.missed`), and a visible ack is followed by the truth.

const scenario = (visibleAcks: boolean) => `
name: steered too late
config:
  queue: { mode: steer }
  staleReplyRecheck: { enabled: false }
  delivery: { visibleAcks: ${visibleAcks} }
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:1", channel: web, id: m1, text: "tell me about trains" }
  - { at: 500, session: "web:1", channel: web, id: m2, text: "and buses" }
`;

describe("a steered message the run never saw", () => {
  it("is said after the run ends (steer.missed) and answered by its own turn", async () => {
    const result = await play(scenario(false));
    expect(result.acks.find((ack) => ack.messageId === "m2")?.disposition).toBe("steered");
    expect(eventsOf(result, "steer.missed")).toEqual([
      expect.objectContaining({ session: "web:1", runId: "web:1#1", messageIds: ["m2"] }),
    ]);
    const replies = result.deliveries.filter((d) => d.kind === "reply").map((d) => d.text);
    expect(replies).toEqual(["Re: tell me about trains", "Re: and buses"]);
  });

  it("with visible acks, the user is told the earlier ack no longer holds before the answer", async () => {
    const result = await play(scenario(true));
    const texts = result.deliveries.map((d) => `${d.kind}: ${d.text}`);
    const steeredAck = texts.findIndex((t) => t.startsWith("ack:") && t.includes("next step"));
    const correction = texts.findIndex((t) => /finished before it could take your message/.test(t));
    const answer = texts.indexOf("reply: Re: and buses");
    expect(steeredAck).toBeGreaterThanOrEqual(0);
    expect(correction).toBeGreaterThan(steeredAck);
    expect(answer).toBeGreaterThan(correction);
  });

  it("a steered message the run did see says nothing more", async () => {
    const withTool = scenario(false).replace(
      "model:\n",
      "model:\n  - when: { call: 1 }\n    reply: { delayMs: 100, toolCalls: [{ name: look, args: {} }] }\n",
    );
    const result = await play(
      `${withTool}tools:\n  look: { durationMs: 1000, result: ok, cancellable: false }\n`,
    );
    expect(result.acks.find((ack) => ack.messageId === "m2")?.disposition).toBe("steered");
    expect(eventsOf(result, "steer.injected")).toHaveLength(1);
    expect(eventsOf(result, "steer.missed")).toEqual([]);
  });
});
