import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import {
  expectAnsweredOnceEach,
  expectEveryToolCallClosed,
  expectSeqIncreasing,
  priorityOfTurnsAfterRestart,
} from "../support/restart.js";
import { eventsOf, expectNoCrash, play, runOfTurn, transcript } from "../support/scenario.js";

// Restarts (`restart: [{ at }]`: every in-process timer and promise dies, a new gateway starts on the
// same store) at several points of a turn's life (docs/store.md, invariants 5 and 6): every accepted
// message is answered exactly once, no marker or recovery is duplicated, and the turn a restart cut off
// runs again in the background lane.

describe("a restart cuts a turn off", () => {
  it("runs a turn cut off mid model call again, in the background lane, and answers its message once", async () => {
    const result = await play(`
name: kill -9 while the model streams
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "How many open tickets are there?" }
restart:
  - { at: 500 }
`);
    expect(eventsOf(result, "session.resumed")).toEqual([
      expect.objectContaining({
        session: "web:a",
        note: expect.stringContaining(`${runOfTurn(result, 1)} was cut off`),
      }),
    ]);
    expect(priorityOfTurnsAfterRestart(result, "web:a")).toEqual(["background"]);
    expectAnsweredOnceEach(result, "web:a", ["m1"]);
    expect(result.deliveries).toEqual([
      expect.objectContaining({
        at: 1500,
        kind: "reply",
        runId: runOfTurn(result, 2),
        text: "Re: How many open tickets are there?",
      }),
    ]);
    // The cut-off call and the one of the resumed turn; the message was stored once, before the first.
    expect(result.modelCalls.map((call) => [call.runId, call.latestUser])).toEqual([
      [runOfTurn(result, 1), "How many open tickets are there?"],
      [runOfTurn(result, 2), "How many open tickets are there?"],
    ]);
    // The resumed turn shows the model its stored message as this turn's, not as history (docs/scenarios.md).
    expect(result.modelCalls.map((call) => call.userTexts)).toEqual([
      ["How many open tickets are there?"],
      ["How many open tickets are there?"],
    ]);
    expectNoCrash(result);
  });

  it("closes the tool call a restart cut off with a synthetic result, then runs the turn again", async () => {
    const result = await play(await readFile("examples/06-restart-mid-tool.yaml", "utf8"));
    const records = transcript(result, "web:ops");
    expectEveryToolCallClosed(records);
    const cutCall = records.find(
      (record) => record.role === "toolCall" && record.runId === runOfTurn(result, 1),
    );
    expect(cutCall).toMatchObject({ name: "fetch_report", args: { id: 42 } });
    const synthetic = records.find(
      (record) =>
        record.role === "toolResult" && cutCall?.role === "toolCall" && record.callId === cutCall.callId,
    );
    expect(synthetic).toMatchObject({ status: "cancelled", runId: runOfTurn(result, 2) });
    expect(synthetic?.role === "toolResult" && String(synthetic.result)).toMatch(/restart/);
    // The synthetic result comes before anything of the resumed turn.
    expect(records.indexOf(synthetic!)).toBe(records.indexOf(cutCall!) + 1);
    expect(priorityOfTurnsAfterRestart(result, "web:ops")).toEqual(["background"]);
    expectAnsweredOnceEach(result, "web:ops", ["r1"]);
    expect(result.toolCalls.map((call) => [call.runId, call.status])).toEqual([
      [runOfTurn(result, 2), "done"],
    ]);
    expectSeqIncreasing(records);
    expectNoCrash(result);
  });

  it("runs follow-ups queued behind a cut-off turn once each, in order, after the resumed turn", async () => {
    const result = await play(`
name: kill -9 with follow-ups waiting
config:
  queue: { mode: followup }
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "first question" }
  - { at: 200, session: "web:a", channel: web, id: m2, text: "second question" }
  - { at: 300, session: "web:a", channel: web, id: m3, text: "third question" }
  - { at: 2000, session: "web:a", channel: web, id: m4, text: "fourth question" }
restart:
  - { at: 500 }
`);
    expect(result.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["m1", "started"],
      ["m2", "queued"],
      ["m3", "queued"],
      ["m4", "queued"],
    ]);
    expectAnsweredOnceEach(result, "web:a", ["m1", "m2", "m3", "m4"]);
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual([
      "Re: first question",
      "Re: second question",
      "Re: third question",
      "Re: fourth question",
    ]);
    // Only the cut-off turn was resumed; it waited in the background lane.
    expect(eventsOf(result, "session.resumed")).toHaveLength(1);
    expect(priorityOfTurnsAfterRestart(result, "web:a")[0]).toBe("background");
    expect(result.modelCalls.map((call) => call.latestUser)).toEqual([
      "first question",
      "first question",
      "second question",
      "third question",
      "fourth question",
    ]);
    expectNoCrash(result);
  });

  it("answers messages collected before a restart in one turn after it, with those collected later", async () => {
    const result = await play(`
name: kill -9 during a collect window
config:
  queue: { mode: collect, debounceMs: 1000 }
model:
  - reply: { delayMs: 300, text: "Seen: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "first" }
  - { at: 100, session: "web:a", channel: web, id: m2, text: "second" }
  - { at: 500, session: "web:a", channel: web, id: m3, text: "third" }
  - { at: 700, session: "web:a", channel: web, id: m4, text: "fourth" }
restart:
  - { at: 600 }
`);
    expect(result.acks.map((ack) => [ack.messageId, ack.disposition])).toEqual([
      ["m1", "started"],
      ["m2", "collected"],
      ["m3", "collected"],
      ["m4", "collected"],
    ]);
    const records = transcript(result, "web:a");
    expect(records.flatMap((record) => (record.role === "user" ? [record.messageId] : []))).toEqual([
      "m1",
      "m2",
      "m3",
      "m4",
    ]);
    // m1's own turn, then one turn for the whole burst, which saw every message of it.
    const burstCall = result.modelCalls.at(-1);
    expect(burstCall?.userTexts).toEqual(["second", "third", "fourth"]);
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual(["Seen: first", "Seen: fourth"]);
    expect(records.filter((record) => record.role === "assistant")).toHaveLength(2);
    expectNoCrash(result);
  });

  it("does not lose a message whose turn a second restart cuts off after the first restart found the session idle", async () => {
    const result = await play(`
name: two restarts, the second mid-turn
model:
  - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "one" }
  - { at: 2000, session: "web:a", channel: web, id: m2, text: "two" }
restart:
  - { at: 1000 }
  - { at: 2100 }
`);
    expect(eventsOf(result, "process.restarted")).toHaveLength(2);
    expectAnsweredOnceEach(result, "web:a", ["m1", "m2"]);
    expect(result.deliveries.map((delivery) => delivery.text)).toEqual(["Re: one", "Re: two"]);
    expectNoCrash(result);
  });

  it("acknowledges a message redelivered after a restart as a duplicate and answers it once", async () => {
    const result = await play(`
name: the channel redelivers after kill -9
model:
  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }
channels:
  web: {}
inbound:
  - { at: 0, session: "web:a", channel: web, id: m1, text: "first question" }
  - { at: 600, session: "web:a", channel: web, id: m1, text: "first question" }
  - { at: 3000, session: "web:a", channel: web, id: m1, text: "first question" }
restart:
  - { at: 500 }
`);
    expect(result.acks.map((ack) => [ack.at, ack.messageId, ack.disposition])).toEqual([
      [0, "m1", "started"],
      [600, "m1", "duplicate"],
      [3000, "m1", "duplicate"],
    ]);
    expectAnsweredOnceEach(result, "web:a", ["m1"]);
    expectNoCrash(result);
  });
});
