import { describe, expect, it } from "vitest";
import { tillerEvent } from "../../src/events.js";
import { MessageLog } from "../../src/gateway/explain/message-log.js";

// A turn's start is noted after the step that calls the model: these check that it still lands where
// it did when it was noted at once, before the events and reads that follow it.

const started = (messageId: string, runId: string, at: number) =>
  tillerEvent("turn.started", at, {
    session: "s",
    runId,
    kind: "turn",
    messageIds: [messageId],
    trigger: "user",
  });

const acked = (messageId: string, at: number, waitsFor?: "turn-start") =>
  tillerEvent("message.acked", at, {
    session: "s",
    messageId,
    disposition: waitsFor ? "steered" : "started",
    mode: "steer",
    modeSource: "default",
    text: "Got it.",
    ...(waitsFor ? { waitsFor } : {}),
  });

describe("MessageLog: a turn's start", () => {
  it("is noted before the next event: the ack that follows sees the turn that started with the message", () => {
    const log = new MessageLog();
    log.observe(started("m1", "s#1", 5));
    log.observe(acked("m1", 6, "turn-start"));
    expect(log.explain("s", "m1")).toMatchObject({
      disposition: "steered",
      waited: [{ where: "turn-start", from: 5, until: 6 }],
      timeline: [
        { at: 5, what: expect.stringContaining("arrived") },
        { at: 5, what: "turn s#1 started with it" },
      ],
    });
  });

  it("is noted before a read, and later starts follow earlier ones in order", () => {
    const log = new MessageLog();
    log.observe(acked("m1", 1));
    log.observe(started("m1", "s#1", 2));
    log.observe(started("m1", "s#2", 3));
    expect(log.explain("s", "m1")?.timeline.map((item) => item.what)).toEqual([
      expect.stringContaining("arrived"),
      "turn s#1 started with it",
      "turn s#2 started with it",
    ]);
  });
});
