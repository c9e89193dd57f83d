import { describe, expect, it } from "vitest";
import { LONG, MARKER, RECOVERED, recordKinds, STRANDED_AND_RESENT } from "../support/delivery.js";
import {
  expectAnsweredOnceEach,
  expectEveryToolCallClosed,
  priorityOfTurnsAfterRestart,
} from "../support/restart.js";
import { customs, eventsOf, expectNoCrash, play, runOfTurn, transcript } from "../support/scenario.js";

// Restarts (`restart: [{ at }]`) that meet a stranded reply: the marker and the recovery happen once
// (docs/store.md, invariants 5 and 6).

describe("a restart meets a stranded reply", () => {
  it("runs a recovery that waited for its lane at the restart once, with no second marker", async () => {
    const result = await play(`
name: kill -9 while the recovery waits for a lane slot
config:
  lanes: { main: 1 }
model:
  - when: { session: "web:busy" }
    reply: { delayMs: 2000, text: "Busy answer." }
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: { failSends: 1 }
  web: {}
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
  - { at: 100, session: "web:busy", channel: web, id: b1, text: "Run the long job" }
restart:
  - { at: 1000 }
`);
    const records = transcript(result, "telegram:7");
    expect(customs(records, MARKER)).toEqual([
      expect.objectContaining({
        // seq 2 is the final's delivery intent, seq 3 the final (its receipt).
        details: expect.objectContaining({ finalSeq: 3, deliveryMode: "automatic" }),
      }),
    ]);
    expect(customs(records, RECOVERED)).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({
          strandedRunId: runOfTurn(result, 1, "telegram:7"),
          recovered: true,
        }),
      }),
    ]);
    expect(eventsOf(result, "marker.appended")).toHaveLength(1);
    expect(eventsOf(result, "recovery.queued")).toHaveLength(1);
    expect(
      eventsOf(result, "session.resumed")
        .map((event) => event.session)
        .sort(),
    ).toEqual(["telegram:7", "web:busy"]);
    const recoveries = result.deliveries.filter((delivery) => delivery.kind === "recovery");
    expect(recoveries.map((delivery) => [delivery.session, delivery.text])).toEqual([["telegram:7", LONG]]);
    // The long job, cut off mid model call, ran again and was answered once.
    expect(priorityOfTurnsAfterRestart(result, "web:busy")).toEqual(["background"]);
    expectAnsweredOnceEach(result, "web:busy", ["b1"]);
    expectNoCrash(result);
  });

  it("runs a message_tool recovery cut off mid model call again once: one marker, one send", async () => {
    const result = await play(`
name: kill -9 during the recovery turn
config:
  delivery: { visibleReplies: message_tool }
model:
  - when: { recovery: true, call: 1 }
    reply: { delayMs: 400, toolCalls: [{ name: message, args: { action: send, text: "Recovered plan: freeze, copy, verify, switch." } }] }
  - when: { recovery: true }
    reply: { delayMs: 10, text: "" }
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: {}
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
restart:
  - { at: 700 }
`);
    const records = transcript(result, "telegram:7");
    expect(customs(records, MARKER)).toEqual([
      expect.objectContaining({
        details: expect.objectContaining({ finalSeq: 2, deliveryMode: "message_tool_only" }),
      }),
    ]);
    expect(customs(records, RECOVERED)).toHaveLength(1);
    expect(eventsOf(result, "marker.appended")).toHaveLength(1);
    expect(eventsOf(result, "session.resumed")).toEqual([
      expect.objectContaining({ note: expect.stringContaining(`recovery of ${runOfTurn(result, 1)}`) }),
    ]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", "Recovered plan: freeze, copy, verify, switch."],
    ]);
    expect(result.deliveries.some((delivery) => delivery.text === LONG)).toBe(false);
    expect(records.filter((record) => record.role === "assistant")).toHaveLength(1);
    expectEveryToolCallClosed(records);
    expectNoCrash(result);
  });

  it("marks and recovers once a stranded final whose turn a restart cut off just before it was due", async () => {
    const result = await play(`
name: kill -9 at the moment the final is due
model:
  - reply: { delayMs: 500, text: ${JSON.stringify(LONG)} }
channels:
  telegram: { failSends: 1 }
inbound:
  - { at: 0, session: "telegram:7", channel: telegram, id: p1, text: "How do we migrate the orders table?" }
restart:
  - { at: 500 }
`);
    const records = transcript(result, "telegram:7");
    expect(recordKinds(records)).toEqual(STRANDED_AND_RESENT);
    expect(records[2]).toMatchObject({ runId: runOfTurn(result, 2), delivered: false });
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([["recovery", LONG]]);
    expect(eventsOf(result, "recovery.queued")).toHaveLength(1);
    expectNoCrash(result);
  });
});
