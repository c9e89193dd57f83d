import { describe, expect, it } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";

// The stale-reply re-check end to end (docs/recheck.md), through the scenario runner on a simulated clock,
// asserting on the JSON output of docs/scenarios.md.

async function play(yaml: string): Promise<ScenarioResult> {
  const { result } = await runScenario(parseScenario(yaml, "x.yaml"));
  return result;
}

/** Turn number (1, 2, ... in the order turns started) of a run id; run ids themselves are opaque. */
function turnOf(result: ScenarioResult, runId: unknown): number {
  const started = result.events.filter((event) => event.type === "turn.started").map((event) => event.runId);
  const index = started.indexOf(runId as string);
  if (index < 0) throw new Error(`no turn.started for run ${String(runId)}`);
  return index + 1;
}

function runOfTurn(result: ScenarioResult, turn: number): string {
  const started = result.events.filter((event) => event.type === "turn.started");
  return String(started[turn - 1]?.runId);
}

function callsOfTurn(result: ScenarioResult, turn: number) {
  return result.modelCalls.filter((call) => call.runId === runOfTurn(result, turn));
}

function rechecks(result: ScenarioResult) {
  return result.events
    .filter((event) => event.type === "recheck.fired" || event.type === "recheck.skipped")
    .map((event) => ({ type: event.type, reason: event.reason, turn: turnOf(result, event.runId) }));
}

function replies(result: ScenarioResult) {
  return result.deliveries.filter((delivery) => delivery.kind === "reply");
}

/** Every inbound message has exactly one ack, with text a person can read (docs/scenarios.md). */
function expectOneReadableAckEach(result: ScenarioResult, messageIds: string[]): void {
  expect(result.acks.map((ack) => ack.messageId).sort()).toEqual([...messageIds].sort());
  for (const ack of result.acks) {
    expect(ack.text.trim().length).toBeGreaterThan(5);
    expect(ack.text).toMatch(/^[A-Z][^\n]*[.!?]$/);
    expect(ack.text).not.toMatch(/undefined|null|NaN|\[object/);
  }
  const ackEvents = result.events
    .filter((event) => event.type === "message.acked")
    .map((event) => event.messageId);
  expect(ackEvents.sort()).toEqual([...messageIds].sort());
}

/** Each user message is stored once in its session's transcript, and shown as new to exactly one run. */
function expectEachMessageOnce(result: ScenarioResult, session: string, messageIds: string[]): void {
  const stored = (result.transcripts[session] ?? []).flatMap((record) =>
    record.role === "user" ? [record.messageId] : [],
  );
  expect([...stored].sort()).toEqual([...messageIds].sort());
  const runsSeeing = new Map<string, Set<string>>();
  for (const event of result.events) {
    if (event.type !== "model.called" || event.session !== session) continue;
    for (const id of (event.messageIds as string[] | undefined) ?? []) {
      const runs = runsSeeing.get(id) ?? new Set<string>();
      runs.add(String(event.runId));
      runsSeeing.set(id, runs);
    }
  }
  for (const id of messageIds) expect([...(runsSeeing.get(id) ?? [])], `runs that saw ${id}`).toHaveLength(1);
}

const PASSES_SCENARIO = (recheck: string) => `
name: messages keep arriving while the answer is drafted
config:
  staleReplyRecheck: ${recheck}
model:
  - when: { recheck: true }
    reply: { delayMs: 1000, text: "Re-drafted for: {{latestUser}}" }
  - reply: { delayMs: 1000, text: "Draft for: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: q1, text: "What's the weather in Paris?" }
  - { at: 500, session: "web:a", channel: web, id: q2, text: "And Berlin?" }
  - { at: 1500, session: "web:a", channel: web, id: q3, text: "And Rome?" }
  - { at: 2500, session: "web:a", channel: web, id: q4, text: "And Oslo?" }
`;

describe("each signal re-drafts a stale answer", () => {
  it("re-drafts for newer-message when a question arrives while the answer is drafted", async () => {
    const result = await play(`
name: a newer question arrives while the answer is drafted
model:
  - when: { recheck: true }
    reply: { delayMs: 400, text: "Paris is sunny today; and for Berlin, expect light rain tonight." }
  - when: { latestUser: "weather in paris" }
    reply: { delayMs: 1500, text: "Paris: sunny, 24 degrees." }
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:alice", channel: web, id: q1, text: "What's the weather in Paris?" }
  - { at: 800, session: "web:alice", channel: web, id: q2, text: "Actually, what about Berlin tonight?" }
`);
    expect(rechecks(result)).toEqual([{ type: "recheck.fired", reason: "newer-message", turn: 1 }]);
    expect(
      result.modelCalls.map((call) => [turnOf(result, call.runId), call.call, call.recheck, call.userTexts]),
    ).toEqual([
      [1, 1, false, ["What's the weather in Paris?"]],
      [1, 2, true, ["What's the weather in Paris?", "Actually, what about Berlin tonight?"]],
    ]);
    expect(result.modelCalls[1]?.latestUser).toBe("Actually, what about Berlin tonight?");
    expect(replies(result).map((reply) => [reply.at, reply.text])).toEqual([
      [1900, "Paris is sunny today; and for Berlin, expect light rain tonight."],
    ]);
    expect(result.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["q1", "started"],
      ["q2", "steered"],
    ]);
    expectOneReadableAckEach(result, ["q1", "q2"]);
    expectEachMessageOnce(result, "web:alice", ["q1", "q2"]);
    // The superseded draft and the re-anchor instruction are stored, hidden, then the steered message
    // and the delivered answer.
    const records = result.transcripts["web:alice"] ?? [];
    expect(records.map((record) => (record.role === "custom" ? record.customType : record.role))).toEqual([
      "user",
      "tiller.superseded-draft",
      "tiller.recheck",
      "user",
      "tiller.delivery-intent",
      "assistant",
    ]);
    expect(records[1]).toMatchObject({ display: false, details: { text: "Paris: sunny, 24 degrees." } });
    expect(records[2]).toMatchObject({ display: false, details: { reason: "newer-message" } });
    expect(records.at(-1)).toMatchObject({ role: "assistant", delivered: true });
  });

  it("re-drafts for complaint when the user says the last reply missed the question", async () => {
    const result = await play(`
name: you didn't answer my question
model:
  - when: { latestUser: "deploy", call: 1 }
    reply: { delayMs: 300, text: "Our release notes are in the wiki." }
  - when: { recheck: true }
    reply: { delayMs: 300, text: "Sorry, you're right. To answer your question: deploys run every weekday at 10:00." }
  - when: { latestUser: "answer my question" }
    reply: { delayMs: 300, text: "Release notes are published weekly." }
channels:
  slack: {}
inbound:
  - { at: 0, session: "slack:C1", channel: slack, id: a1, text: "When do deploys run?" }
  - { at: 2000, session: "slack:C1", channel: slack, id: a2, text: "You didn't answer my question." }
`);
    expect(rechecks(result)).toEqual([{ type: "recheck.fired", reason: "complaint", turn: 2 }]);
    expect(result.modelCalls.map((call) => [turnOf(result, call.runId), call.call, call.recheck])).toEqual([
      [1, 1, false],
      [2, 1, false],
      [2, 2, true],
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Our release notes are in the wiki.",
      "Sorry, you're right. To answer your question: deploys run every weekday at 10:00.",
    ]);
    expectOneReadableAckEach(result, ["a1", "a2"]);
    expectEachMessageOnce(result, "slack:C1", ["a1", "a2"]);
  });

  it("re-drafts for low-overlap when the draft answers an earlier turn's question", async () => {
    const result = await play(`
name: the draft answers the previous question again
model:
  - when: { recheck: true }
    reply: { delayMs: 200, text: "Berlin tonight: light rain, around 12 degrees." }
  - when: { latestUser: "berlin" }
    reply: { delayMs: 200, text: "Paris weather today: sunny in Paris, 24 degrees." }
  - reply: { delayMs: 200, text: "Paris weather today: sunny, 24 degrees." }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:b", channel: web, id: w1, text: "What's the weather in Paris today?" }
  - { at: 1000, session: "web:b", channel: web, id: w2, text: "Actually, what about Berlin tonight?" }
`);
    expect(rechecks(result)).toEqual([{ type: "recheck.fired", reason: "low-overlap", turn: 2 }]);
    const fired = result.events.find((event) => event.type === "recheck.fired");
    expect(String(fired?.detail)).toMatch(/older/);
    expect(callsOfTurn(result, 2).map((call) => call.recheck)).toEqual([false, true]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Paris weather today: sunny, 24 degrees.",
      "Berlin tonight: light rain, around 12 degrees.",
    ]);
    expectOneReadableAckEach(result, ["w1", "w2"]);
    expectEachMessageOnce(result, "web:b", ["w1", "w2"]);
  });
});

describe("no false positives", () => {
  it('delivers "4." to "what\'s 2+2?" without a re-check', async () => {
    const result = await play(`
name: a short correct answer is not stale
model:
  - when: { latestUser: "2+2" }
    reply: { delayMs: 100, text: "4." }
  - reply: { delayMs: 100, text: "Paris is the capital of France." }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:bob", channel: web, id: b1, text: "What is the capital of France?" }
  - { at: 1000, session: "web:bob", channel: web, id: b2, text: "what's 2+2?" }
`);
    expect(rechecks(result)).toEqual([]);
    expect(result.modelCalls.every((call) => !call.recheck)).toBe(true);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Paris is the capital of France.", "4."]);
    expectOneReadableAckEach(result, ["b1", "b2"]);
  });

  it("delivers a fluent answer to the newest message without a re-check", async () => {
    const result = await play(`
name: a fluent answer
model:
  - when: { latestUser: "berlin" }
    reply: { delayMs: 200, text: "Berlin tonight: light rain, around 12 degrees." }
  - reply: { delayMs: 200, text: "Paris weather today: sunny, 24 degrees." }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:c", channel: web, id: f1, text: "What's the weather in Paris today?" }
  - { at: 1000, session: "web:c", channel: web, id: f2, text: "Actually, what about Berlin tonight?" }
`);
    expect(rechecks(result)).toEqual([]);
    expect(result.modelCalls).toHaveLength(2);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Paris weather today: sunny, 24 degrees.",
      "Berlin tonight: light rain, around 12 degrees.",
    ]);
  });

  it("delivers a draft that acknowledges a complaint without a re-check", async () => {
    const result = await play(`
name: an acknowledged complaint
model:
  - when: { latestUser: "answer my question" }
    reply: { delayMs: 300, text: "Sorry, I missed that. Deploys run every weekday at 10:00." }
  - reply: { delayMs: 300, text: "Our release notes are in the wiki." }
channels:
  slack: {}
inbound:
  - { at: 0, session: "slack:C2", channel: slack, id: c1, text: "When do deploys run?" }
  - { at: 2000, session: "slack:C2", channel: slack, id: c2, text: "You didn't answer my question." }
`);
    expect(rechecks(result)).toEqual([]);
    expect(replies(result).at(-1)?.text).toBe("Sorry, I missed that. Deploys run every weekday at 10:00.");
  });

  it("does not call a turn stale for messages queued as their own follow-up turns", async () => {
    const result = await play(`
name: follow-ups are answered in order
config:
  queue: { mode: followup }
model:
  - reply: { delayMs: 1000, text: "Answer to: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:d", channel: web, id: d1, text: "What's the weather in Paris?" }
  - { at: 500, session: "web:d", channel: web, id: d2, text: "And Berlin?" }
`);
    expect(rechecks(result)).toEqual([]);
    expect(result.acks.map((ack) => ack.disposition)).toEqual(["started", "queued"]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Answer to: What's the weather in Paris?",
      "Answer to: And Berlin?",
    ]);
  });
});

describe("the re-check limit", () => {
  it("with maxPasses 0 never re-drafts: the stale draft ships with recheck.skipped (limit), the newer message gets its own turn", async () => {
    const result = await play(PASSES_SCENARIO("{ maxPasses: 0 }"));
    expect(result.events.filter((event) => event.type === "recheck.fired")).toEqual([]);
    expect(rechecks(result)).toContainEqual({ type: "recheck.skipped", reason: "limit", turn: 1 });
    expect(result.modelCalls.every((call) => !call.recheck)).toBe(true);
    expect(replies(result)[0]?.text).toBe("Draft for: What's the weather in Paris?");
    // The message that made the draft stale is answered next, in a turn of its own.
    expect(callsOfTurn(result, 2)[0]?.userTexts).toEqual(["And Berlin?"]);
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
    expectOneReadableAckEach(result, ["q1", "q2", "q3", "q4"]);
  });

  it("with maxPasses 1 re-drafts once, then ships the next stale draft with recheck.skipped (limit)", async () => {
    const result = await play(PASSES_SCENARIO("{ maxPasses: 1 }"));
    const firstRun = rechecks(result).filter((event) => event.turn === 1);
    expect(firstRun).toEqual([
      { type: "recheck.fired", reason: "newer-message", turn: 1 },
      { type: "recheck.skipped", reason: "limit", turn: 1 },
    ]);
    expect(callsOfTurn(result, 1).map((call) => call.userTexts)).toEqual([
      ["What's the weather in Paris?"],
      ["What's the weather in Paris?", "And Berlin?"],
    ]);
    expect(replies(result)[0]?.text).toBe("Re-drafted for: And Berlin?");
    // q3 reached the run too late for its one pass: it starts the next turn instead of being lost.
    expect(callsOfTurn(result, 2)[0]?.userTexts[0]).toBe("And Rome?");
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
    expectOneReadableAckEach(result, ["q1", "q2", "q3", "q4"]);
  });

  it("with maxPasses 2 re-drafts twice, then ships the third draft with recheck.skipped (limit)", async () => {
    const result = await play(PASSES_SCENARIO("{ maxPasses: 2 }"));
    expect(rechecks(result).filter((event) => event.turn === 1)).toEqual([
      { type: "recheck.fired", reason: "newer-message", turn: 1 },
      { type: "recheck.fired", reason: "newer-message", turn: 1 },
      { type: "recheck.skipped", reason: "limit", turn: 1 },
    ]);
    expect(callsOfTurn(result, 1).map((call) => call.recheck)).toEqual([false, true, true]);
    expect(callsOfTurn(result, 1).at(-1)?.userTexts).toEqual([
      "What's the weather in Paris?",
      "And Berlin?",
      "And Rome?",
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Re-drafted for: And Rome?",
      "Draft for: And Oslo?",
    ]);
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
  });

  it("never fires more than maxPasses times in one run, for maxPasses 0, 1 and 2", async () => {
    for (const maxPasses of [0, 1, 2]) {
      const result = await play(PASSES_SCENARIO(`{ maxPasses: ${maxPasses} }`));
      const firedPerRun = new Map<string, number>();
      for (const event of result.events) {
        if (event.type === "recheck.fired") {
          firedPerRun.set(String(event.runId), (firedPerRun.get(String(event.runId)) ?? 0) + 1);
        }
      }
      for (const count of firedPerRun.values()) expect(count).toBeLessThanOrEqual(maxPasses);
    }
  });

  it("with the re-check disabled never re-drafts and says so with recheck.skipped (disabled)", async () => {
    const result = await play(PASSES_SCENARIO("{ enabled: false, maxPasses: 1 }"));
    expect(result.events.filter((event) => event.type === "recheck.fired")).toEqual([]);
    expect(rechecks(result)[0]).toEqual({ type: "recheck.skipped", reason: "disabled", turn: 1 });
    expect(rechecks(result).every((event) => event.reason === "disabled")).toBe(true);
    expect(result.modelCalls.every((call) => !call.recheck)).toBe(true);
    expect(replies(result)[0]?.text).toBe("Draft for: What's the weather in Paris?");
    expectEachMessageOnce(result, "web:a", ["q1", "q2", "q3", "q4"]);
    expectOneReadableAckEach(result, ["q1", "q2", "q3", "q4"]);
  });
});

describe("a correction while a tool runs", () => {
  const CORRECTION = `
name: correction while a tool runs
config:
  queue: { mode: steer }
  staleReplyRecheck: { enabled: true, maxPasses: 1 }
  delivery: { visibleReplies: auto }
model:
  - when: { latestUser: "break down", call: 1 }
    reply: { delayMs: 200, toolCalls: [{ name: write_file, args: { path: checklist.md } }, { name: write_file, args: { path: notes.md } }] }
  - when: { latestUser: "don't change" }
    reply: { delayMs: 300, text: "Understood: I will not change the file. Proposal: split item 2 into three steps first." }
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
tools:
  write_file: { durationMs: 3000, result: "written", cancellable: false }
channels:
  telegram: { failSends: 0, omitMessageId: false }
inbound:
  - { at: 0, session: "telegram:42", channel: telegram, id: m1, text: "Break down item 2 and update the file" }
  - { at: 1000, session: "telegram:42", channel: telegram, id: m2, text: "Don't change the file yet." }
`;

  it("steers the correction in, skips the second write, and delivers the correction's answer", async () => {
    const result = await play(CORRECTION);

    expect(result.acks.map((ack) => [ack.messageId, ack.disposition, ack.mode])).toEqual([
      ["m1", "started", "steer"],
      ["m2", "steered", "steer"],
    ]);
    // The steer ack is truthful: the running tool cannot be cancelled, and it will finish first.
    expect(result.acks[1]?.text).toMatch(/write_file/);
    expect(result.acks[1]?.text).toMatch(/cannot be cancelled/);
    expectOneReadableAckEach(result, ["m1", "m2"]);

    expect(result.toolCalls.map((call) => [call.name, call.args, call.status])).toEqual([
      ["write_file", { path: "checklist.md" }, "done"],
      ["write_file", { path: "notes.md" }, "skipped"],
    ]);
    expect(result.events.filter((event) => event.type === "tool.skipped")).toHaveLength(1);
    expect(result.events.find((event) => event.type === "steer.injected")).toMatchObject({
      messageIds: ["m2"],
      runId: runOfTurn(result, 1),
      at: 3200,
    });

    expect(result.modelCalls).toHaveLength(2);
    expect(result.modelCalls[1]).toMatchObject({
      runId: runOfTurn(result, 1),
      call: 2,
      recheck: false,
      latestUser: "Don't change the file yet.",
      userTexts: ["Break down item 2 and update the file", "Don't change the file yet."],
    });
    expect(rechecks(result)).toEqual([]);

    expect(result.deliveries).toEqual([
      expect.objectContaining({
        at: 3500,
        session: "telegram:42",
        channel: "telegram",
        kind: "reply",
        text: "Understood: I will not change the file. Proposal: split item 2 into three steps first.",
        runId: runOfTurn(result, 1),
      }),
    ]);
    expect(result.deliveries[0]?.messageId).not.toBe("");
  });

  it("stores the turn once: both messages, the done and skipped tool calls, then the delivered answer", async () => {
    const result = await play(CORRECTION);
    const records = result.transcripts["telegram:42"] ?? [];
    expect(records.map((record) => record.seq)).toEqual(records.map((_, index) => index + 1));
    expect(
      records.map((record) => {
        switch (record.role) {
          case "user":
            return `user ${record.messageId}`;
          case "toolCall":
            return `call ${JSON.stringify(record.args)}`;
          case "toolResult":
            return `result ${record.status}`;
          case "assistant":
            return `assistant delivered=${record.delivered}`;
          default:
            return String(record.role);
        }
      }),
    ).toEqual([
      "user m1",
      'call {"path":"checklist.md"}',
      "result done",
      'call {"path":"notes.md"}',
      "result skipped",
      "user m2",
      "custom",
      "assistant delivered=true",
    ]);
    expectEachMessageOnce(result, "telegram:42", ["m1", "m2"]);
  });
});
