import { describe, expect, it } from "vitest";
import {
  callsOfTurn,
  expectEachMessageOnce,
  expectOneReadableAckEach,
  rechecks,
  turnOf,
} from "../support/recheck.js";
import { play, replies } from "../support/scenario.js";

// The stale-reply re-check end to end (docs/recheck.md), through the scenario runner on a simulated clock,
// asserting on the JSON output of docs/scenarios.md: each signal re-drafts a stale answer, and none fires on a fine one.

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
