import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import { randomScenario } from "../support/random-scenario.js";

// Every tool call in a transcript gets its result record before anything else is appended, whatever
// stopped the turn (an interrupt, /stop, /new, a failure, a crash and restart): the next context sent to
// a strict provider never carries a call without its result.

/** Records that break the rule, in words: a call closed twice, or something appended before its result. */
function unclosedCalls(result: ScenarioResult): string[] {
  const problems: string[] = [];
  for (const [session, records] of Object.entries(result.transcripts)) {
    const open = new Map<string, { seq: number | undefined }>();
    const closed = new Set<string>();
    for (const record of records) {
      if (record.role === "toolCall") {
        open.set(String(record.callId), { seq: record.seq });
        continue;
      }
      if (record.role === "toolResult") {
        const id = String(record.callId);
        if (closed.has(id)) problems.push(`${session}: ${id} has two results`);
        closed.add(id);
        open.delete(id);
        continue;
      }
      for (const [id, call] of open)
        problems.push(
          `${session}: seq ${record.seq} (${record.role}) appended while call ${id} (seq ${call.seq}) had no result`,
        );
      open.clear();
    }
    // A call still open at the end had nothing appended after it: the next write closes it first.
  }
  return problems;
}

describe("tool calls and their results", () => {
  it("a call cut off by a restart gets its result before a new message is stored", async () => {
    const yaml = `
name: cut off mid-tool, then a new message
config:
  queue: { mode: interrupt }
model:
  - when: { latestUser: "use the tool", call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: slow, args: {} }] }
  - reply: { delayMs: 100, text: "Re: {{latestUser}}" }
tools:
  slow: { durationMs: 5000, result: done, cancellable: false }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:1", channel: web, id: m1, text: "please use the tool" }
  - { at: 1000, session: "web:1", channel: web, id: m2, text: "/new" }
  - { at: 3000, session: "web:1", channel: web, id: m3, text: "plain question" }
restart: [{ at: 500 }]
`;
    const { result } = await runScenario(parseScenario(yaml, "x.yaml"));
    expect(unclosedCalls(result)).toEqual([]);
  });

  it("holds over random scenarios of modes, controls, tools, faults and restarts", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1_000_000 }), async (seed) => {
        const { result } = await runScenario(parseScenario(randomScenario(seed), `random-${seed}.yaml`));
        expect(unclosedCalls(result), `seed ${seed}`).toEqual([]);
      }),
      { numRuns: 80 },
    );
  }, 180_000);
});
