import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

const inbound = Array.from(
  { length: 6 },
  (_, i) => `  - { at: ${i * 1000}, session: s, channel: web, id: m${i + 1}, text: "question ${i + 1}" }`,
);

describe("rotation (compaction)", () => {
  it("starts a fresh context window when it grows past the limit, keeping every record", async () => {
    const yaml = [
      "config: { limits: { maxWindowRecords: 4 } }",
      "model:",
      '  - reply: { delayMs: 100, text: "Re: {{latestUser}}" }',
      "inbound:",
      ...inbound,
    ].join("\n");
    const { result, gateway } = await runScenario(parseScenario(yaml, "rotation.yaml"));
    // The model context is the window: after rotating it no longer holds the early turns.
    const window = await gateway.store.readWindow("s");
    expect(window.length).toBeLessThan(result.transcripts.s?.length ?? 0);
    expect(window.some((record) => record.role === "user" && record.messageId === "m1")).toBe(false);
    const rotations = result.events.filter((event) => event.type === "transcript.rotated");
    expect(rotations.length).toBeGreaterThan(0);
    // History is kept: every user message and every answer is still in the transcript.
    const records = result.transcripts.s ?? [];
    expect(records.filter((record) => record.role === "user")).toHaveLength(6);
    expect(records.filter((record) => record.role === "assistant")).toHaveLength(6);
    // Every turn was still answered, and each reply answered its own message.
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual(
      Array.from({ length: 6 }, (_, i) => `Re: question ${i + 1}`),
    );
  });

  it("never rotates below the limit", async () => {
    const yaml = ["model:", '  - reply: { delayMs: 100, text: "ok" }', "inbound:", ...inbound].join("\n");
    const { result } = await runScenario(parseScenario(yaml, "no-rotation.yaml"));
    expect(result.events.some((event) => event.type === "transcript.rotated")).toBe(false);
  });
});
