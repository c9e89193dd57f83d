import { describe, expect, it } from "vitest";
import { play } from "../support/modes.js";

// `queue.collect.maxWaitMs` on the simulated clock: while a first turn runs (0–1000 ms), the user
// starts a burst at 100 ms and writes every 300 ms (inside the 500 ms quiet window): it is handed over
// at most maxWaitMs after its first message, not when they stop.

function typing(config: string, count = 20): string {
  const lines = Array.from(
    { length: count },
    (_, i) =>
      `  - { at: ${100 + i * 300}, session: "web:u", channel: web, id: m${i + 1}, text: "part ${i + 1}" }`,
  );
  return [
    `config: { queue: { mode: collect, debounceMs: 500${config} } }`,
    "model:",
    '  - when: { latestUser: "start" }',
    '    reply: { delayMs: 1000, text: "Started." }',
    '  - reply: { delayMs: 100, text: "Re: {{latestUser}}" }',
    "inbound:",
    '  - { at: 0, session: "web:u", channel: web, id: m0, text: "start" }',
    ...lines,
  ].join("\n");
}

describe("collect: maxWaitMs", () => {
  it("hands a burst over at most maxWaitMs after its first message while messages keep coming", async () => {
    const { result } = await play(typing(", collect: { maxWaitMs: 2000 }"));
    const first = result.modelCalls[1]!;
    expect(first.at).toBeLessThanOrEqual(100 + 2000);
    // It holds every message of the burst up to then (100, 400, …, 1900 ms), and nothing later.
    expect(first.userTexts).toEqual(Array.from({ length: 7 }, (_, i) => `part ${i + 1}`));
    // Every message is answered, each burst within its bound of its own first message.
    const seen = result.modelCalls.flatMap((call) =>
      call.userTexts.filter((text) => text.startsWith("part")),
    );
    expect(new Set(seen).size).toBe(20);
  });

  it("without it, the same user is not answered until they stop", async () => {
    const { result } = await play(typing(""));
    expect(result.modelCalls[1]!.at).toBe(100 + 19 * 300 + 500);
  });
});
