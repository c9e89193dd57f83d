import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";

// Which ids a session remembers: every id it acknowledged as anything but `rejected` (a message in any
// mode, a control, one dropped or cleared by /new or /stop), through turns, interrupts, complaints,
// resets and restarts, for the dedupe window. A channel's redelivery of any of them is a duplicate and
// is never answered again.

type Step =
  | { kind: "message"; text: string; mode?: string }
  | { kind: "control"; text: string }
  | { kind: "restart" }
  | { kind: "redeliver"; pick: number }
  | { kind: "wait"; ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("message" as const),
    text: fc.constantFrom("plain question", "please use the tool", "you did not answer my question"),
    mode: fc.option(fc.constantFrom("steer", "followup", "collect", "interrupt"), { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant("control" as const),
    text: fc.constantFrom("/new", "/stop", "/queue collect"),
  }),
  fc.record({ kind: fc.constant("restart" as const) }),
  fc.record({ kind: fc.constant("redeliver" as const), pick: fc.nat(20) }),
  fc.record({ kind: fc.constant("wait" as const), ms: fc.constantFrom(50, 400, 2000) }),
);

function scenario(steps: Step[], mode: string): { yaml: string; sentBefore: (index: number) => string[] } {
  const inbound: string[] = [];
  const restarts: number[] = [];
  const sent: Array<{ id: string; text: string; at: number }> = [];
  const order: string[][] = [];
  let at = 0;
  let n = 0;
  for (const item of steps) {
    at += 37;
    if (item.kind === "wait") at += item.ms;
    else if (item.kind === "restart") restarts.push(at++);
    else if (item.kind === "redeliver") {
      const original = sent[item.pick % Math.max(1, sent.length)];
      if (original)
        inbound.push(
          `  - { at: ${at}, session: "web:1", channel: web, id: ${original.id}, text: "${original.text}" }`,
        );
    } else {
      const id = `m${++n}`;
      const inline = item.kind === "message" && item.mode ? `, mode: ${item.mode}` : "";
      inbound.push(
        `  - { at: ${at}, session: "web:1", channel: web, id: ${id}, text: "${item.text}"${inline} }`,
      );
      sent.push({ id, text: item.text, at });
    }
    order.push(sent.map((s) => s.id));
  }
  const yaml = `
name: redelivery
config:
  queue: { mode: ${mode}, debounceMs: 300 }
  staleReplyRecheck: { maxPasses: 1 }
model:
  - when: { latestUser: "use the tool", call: 1 }
    reply: { delayMs: 150, toolCalls: [{ name: search, args: { q: x } }] }
  - reply: { delayMs: 400, text: "Re: {{latestUser}}" }
tools:
  search: { durationMs: 1500, result: found, cancellable: true }
channels:
  web: {}
inbound:
${inbound.join("\n") || "  []"}
restart: [${restarts.map((r) => `{ at: ${r} }`).join(", ")}]
`;
  return { yaml, sentBefore: (index) => order[index] ?? [] };
}

/** Ids acked twice as anything but duplicate/rejected after a first ack that accepted them. */
function answeredAgain(result: ScenarioResult): string[] {
  const first = new Map<string, string>();
  const problems: string[] = [];
  for (const ack of result.acks) {
    const before = first.get(ack.messageId);
    if (before === undefined) {
      first.set(ack.messageId, ack.disposition);
      continue;
    }
    if (before !== "rejected" && ack.disposition !== "duplicate" && ack.disposition !== "rejected")
      problems.push(`${ack.messageId}: first ${before}, redelivered and acked ${ack.disposition}`);
  }
  // Never in the transcript twice.
  const stored = new Map<string, number>();
  for (const record of result.transcripts["web:1"] ?? [])
    if (record.role === "user" && record.messageId)
      stored.set(record.messageId, (stored.get(record.messageId) ?? 0) + 1);
  for (const [id, count] of stored) if (count > 1) problems.push(`${id} stored ${count} times`);
  return problems;
}

describe("a session remembers every id it accepted", () => {
  it("collect, an inline interrupt, a complaint, /new, a restart, then a redelivery: a duplicate", async () => {
    const { yaml } = scenario(
      [
        { kind: "message", text: "please use the tool" },
        { kind: "message", text: "plain question" },
        { kind: "message", text: "plain question", mode: "interrupt" },
        { kind: "message", text: "you did not answer my question" },
        { kind: "control", text: "/new" },
        { kind: "restart" },
        { kind: "redeliver", pick: 1 },
        { kind: "redeliver", pick: 4 },
        { kind: "wait", ms: 2000 },
      ],
      "collect",
    );
    const { result } = await runScenario(parseScenario(yaml, "redelivery.yaml"));
    expect(answeredAgain(result)).toEqual([]);
  });

  it("holds for any sequence of modes, controls, restarts and redeliveries", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 3, maxLength: 14 }),
        fc.constantFrom("steer", "followup", "collect", "interrupt"),
        async (steps, mode) => {
          const { yaml } = scenario(steps, mode);
          const { result } = await runScenario(parseScenario(yaml, "redelivery.yaml"));
          expect(answeredAgain(result)).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
