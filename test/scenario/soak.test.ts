import { describe, expect, it } from "vitest";
import { soakWithHeap } from "../../bench/soak.js";

// A small soak (the bench runs 10,000 sessions and 100,000 messages): the real gateway and JSONL store,
// random modes, tool durations, controls and redeliveries on the simulated clock.

describe("soak", () => {
  it("loses nothing, answers nothing twice and keeps each session's order", async () => {
    const figures = await soakWithHeap({ sessions: 40, messages: 400, seed: 11 });
    expect(figures.acked).toBe(400);
    expect(figures.duplicatesAcked).toBeGreaterThan(0);
    expect({
      lost: figures.lost,
      answeredTwice: figures.answeredTwice,
      reordered: figures.reordered,
    }).toEqual({
      lost: 0,
      answeredTwice: 0,
      reordered: 0,
    });
  }, 60_000);
});
