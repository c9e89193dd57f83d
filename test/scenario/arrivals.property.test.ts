import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";

// Random arrival schedules in steer mode (docs/architecture.md; invariants 4, 5 and 12): while a turn runs
// its tools, 1–5 more messages arrive at random times (mid-stream, mid-tool, mid-finalize, after the
// turn). Whatever the schedule, every message is shown to exactly one turn's model calls, acked exactly
// once and stored once, and no run re-checks more than maxPasses times.

interface Schedule {
  arrivals: Array<{ at: number; text: string }>;
  modelDelayMs: number;
  toolDurations: [number, number];
  searchCancellable: boolean;
  maxPasses: number;
}

const TEXTS = [
  "Don't change the file yet.",
  "Also add a due date to item 2.",
  "What about Berlin tonight?",
  "Actually, use notes.md instead.",
  "Is the checklist done?",
];

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  arrivals: fc.array(fc.record({ at: fc.integer({ min: 0, max: 6_000 }), text: fc.constantFrom(...TEXTS) }), {
    minLength: 1,
    maxLength: 5,
  }),
  modelDelayMs: fc.integer({ min: 0, max: 800 }),
  toolDurations: fc.tuple(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 2_000 })),
  searchCancellable: fc.boolean(),
  maxPasses: fc.integer({ min: 0, max: 2 }),
});

function scenarioYaml(schedule: Schedule): string {
  const inbound = [
    { at: 0, id: "m0", text: "Break down item 2 and update the file" },
    ...schedule.arrivals.map((arrival, index) => ({ ...arrival, id: `m${index + 1}` })),
  ];
  return [
    "name: random arrivals while a turn runs its tools",
    "config:",
    "  queue: { mode: steer }",
    `  staleReplyRecheck: { enabled: true, maxPasses: ${schedule.maxPasses} }`,
    "model:",
    "  - when: { call: 1 }",
    `    reply: { delayMs: ${schedule.modelDelayMs}, toolCalls: [{ name: write_file, args: { path: checklist.md } }, { name: search, args: { query: item 2 } }] }`,
    `  - reply: { delayMs: ${schedule.modelDelayMs}, text: "Re: {{latestUser}}" }`,
    "tools:",
    `  write_file: { durationMs: ${schedule.toolDurations[0]}, result: written, cancellable: false }`,
    `  search: { durationMs: ${schedule.toolDurations[1]}, result: found, cancellable: ${schedule.searchCancellable} }`,
    "channels:",
    "  telegram: {}",
    "inbound:",
    ...inbound.map(
      (message) =>
        `  - { at: ${message.at}, session: "telegram:7", channel: telegram, id: ${message.id}, text: ${JSON.stringify(message.text)} }`,
    ),
  ].join("\n");
}

function messageIds(schedule: Schedule): string[] {
  return ["m0", ...schedule.arrivals.map((_, index) => `m${index + 1}`)];
}

function checkInvariants(schedule: Schedule, result: ScenarioResult): void {
  const ids = messageIds(schedule);

  // Consumed exactly once: each message reaches the model calls of exactly one turn, where it appears
  // as new in exactly one call and stays in view for the rest of that turn.
  const runsSeeing = new Map<string, Set<string>>();
  const callsPerRun = new Map<string, string[][]>();
  for (const event of result.events) {
    if (event.type !== "model.called") continue;
    const runId = String(event.runId);
    const seen = (event.messageIds as string[] | undefined) ?? [];
    expect(new Set(seen).size, `a model call of ${runId} shows a message twice`).toBe(seen.length);
    for (const id of seen) {
      const runs = runsSeeing.get(id) ?? new Set<string>();
      runs.add(runId);
      runsSeeing.set(id, runs);
    }
    const calls = callsPerRun.get(runId) ?? [];
    const previous = calls.at(-1) ?? [];
    expect(seen.slice(0, previous.length), `${runId} dropped a message between calls`).toEqual(previous);
    calls.push(seen);
    callsPerRun.set(runId, calls);
  }
  for (const id of ids) {
    expect([...(runsSeeing.get(id) ?? [])], `turns whose model calls saw ${id}`).toHaveLength(1);
  }
  expect([...runsSeeing.keys()].sort()).toEqual([...ids].sort());
  // The modelCalls output agrees: userTexts are the texts of those messages.
  for (const call of result.modelCalls) expect(call.userTexts.length).toBeGreaterThan(0);

  // Acked exactly once, with readable text.
  expect(result.acks.map((ack) => ack.messageId).sort()).toEqual([...ids].sort());
  for (const ack of result.acks) expect(ack.text.trim()).not.toBe("");
  const ackEvents = result.events.filter((event) => event.type === "message.acked");
  expect(ackEvents.map((event) => event.messageId).sort()).toEqual([...ids].sort());
  for (const ack of result.acks) expect(["started", "steered"]).toContain(ack.disposition);

  // Stored once; every stored tool call has its result.
  const records = result.transcripts["telegram:7"] ?? [];
  const storedUsers = records.flatMap((record) => (record.role === "user" ? [record.messageId] : []));
  expect(storedUsers.sort()).toEqual([...ids].sort());
  const open = new Set<string>();
  for (const record of records) {
    if (record.role === "toolCall") open.add(String(record.callId));
    if (record.role === "toolResult") open.delete(String(record.callId));
  }
  expect([...open]).toEqual([]);

  // Invariant 4: at most maxPasses re-checks per run.
  const firedPerRun = new Map<string, number>();
  for (const event of result.events) {
    if (event.type === "recheck.fired") {
      firedPerRun.set(String(event.runId), (firedPerRun.get(String(event.runId)) ?? 0) + 1);
    }
  }
  for (const [runId, fired] of firedPerRun) {
    expect(fired, `re-checks of ${runId}`).toBeLessThanOrEqual(schedule.maxPasses);
  }
  for (const call of result.modelCalls.filter((candidate) => candidate.recheck)) {
    expect(firedPerRun.get(call.runId) ?? 0).toBeGreaterThan(0);
  }

  // Every turn ends, and each one answers with exactly one reply.
  const started = result.events.filter((event) => event.type === "turn.started").map((event) => event.runId);
  const ended = result.events.filter((event) => event.type === "turn.ended");
  expect(ended.map((event) => event.runId).sort()).toEqual([...started].sort());
  expect(ended.every((event) => event.status === "done")).toBe(true);
  const replies = result.deliveries.filter((delivery) => delivery.kind === "reply");
  expect(replies.map((reply) => reply.runId).sort()).toEqual([...started].map(String).sort());
}

describe("random arrivals during a turn with tools (steer mode)", () => {
  it("consumes every message exactly once, acks it once, and re-checks at most maxPasses times per run", async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArb, async (schedule) => {
        const { result } = await runScenario(parseScenario(scenarioYaml(schedule), "x.yaml"));
        checkInvariants(schedule, result);
      }),
      // A failure shrinks by replaying scenarios; the time limit keeps that bounded and still reports it.
      { numRuns: 100, interruptAfterTimeLimit: 45_000, markInterruptAsFailure: true },
    );
  }, 90_000);

  it("handles arrivals at the very instants the turn changes state", async () => {
    // The same instants as the turn's own steps: model reply, tool ends, re-check draft.
    const schedule: Schedule = {
      arrivals: [
        { at: 200, text: TEXTS[0]! },
        { at: 1_200, text: TEXTS[1]! },
        { at: 2_200, text: TEXTS[2]! },
        { at: 2_400, text: TEXTS[3]! },
        { at: 2_600, text: TEXTS[4]! },
      ],
      modelDelayMs: 200,
      toolDurations: [1_000, 1_000],
      searchCancellable: true,
      maxPasses: 1,
    };
    const { result } = await runScenario(parseScenario(scenarioYaml(schedule), "x.yaml"));
    checkInvariants(schedule, result);
  });
});
