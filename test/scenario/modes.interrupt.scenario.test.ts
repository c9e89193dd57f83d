import { describe, expect, it } from "vitest";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import {
  ack,
  acksOf,
  inbound,
  msg,
  play,
  turns,
  userTextsByTurn,
  withTools,
  yaml,
} from "../support/modes.js";
import { eventsOf as events, replies } from "../support/scenario.js";

// One part of the modes scenarios; what they cover and share: test/support/modes.ts.

describe("interrupt", () => {
  it("starts a turn at once when the session is idle, and says nothing about stopping", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: interrupt"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "started", mode: "interrupt" });
    expect(ack(result, "m1").text).not.toMatch(/stop/i);
  });

  it("during a collect window there is nothing to stop: it waits behind the burst", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "first question"),
          msg(100, "c1", "one", "mode: collect"),
          msg(500, "i1", "urgent", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "i1").disposition).toBe("queued");
    expect(ack(result, "i1").text).not.toMatch(/stopping/i);
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["done", "done", "done"]);
    expect(userTextsByTurn(result)).toEqual([["first question"], ["one"], ["urgent"]]);
  });

  it("aborts a streaming turn: it delivers nothing, and the newest message runs next", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "tell me a long story"),
          msg(150, "m2", "never mind, what time is it", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "m2")).toMatchObject({ disposition: "interrupted" });
    expect(ack(result, "m2").text).toContain("Stopping the current reply");
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["aborted", "done"]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: never mind, what time is it"]);
    expect(userTextsByTurn(result)).toEqual([["tell me a long story"], ["never mind, what time is it"]]);
  });

  it("cancels a cancellable tool: the call is cancelled, the transcript closes it with a synthetic result", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "search the archive"), msg(1000, "m2", "forget it", "mode: interrupt"))),
    );
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["search", "cancelled"]]);
    const transcript = result.transcripts.s ?? [];
    const records = transcript as Array<Record<string, unknown>>;
    const call = records.find((record) => record.role === "toolCall" && record.name === "search");
    expect(call?.callId).toBeTruthy();
    const closing = records.filter(
      (record) => record.role === "toolResult" && record.callId === call?.callId,
    );
    expect(closing).toMatchObject([{ status: "cancelled" }]);
    // The aborted turn delivers nothing; the interrupting message is answered at once.
    expect(replies(result).map((reply) => [reply.at, reply.text])).toEqual([[1300, "Re: forget it"]]);
    expect(turns(result)[1]).toMatchObject({ at: 1000, userTexts: ["forget it"] });
  });

  it("lets a tool that cannot be cancelled finish first, and the ack says so", async () => {
    const { result } = await play(
      withTools(
        inbound(msg(0, "m1", "deploy the app"), msg(1000, "m2", "stop, wrong app", "mode: interrupt")),
      ),
    );
    const interrupt = ack(result, "m2");
    expect(interrupt.disposition).toBe("interrupted");
    expect(interrupt.text).toContain("deploy cannot be cancelled, so it finishes first");
    // deploy completes; notify (not started) never runs; nothing of the aborted turn is delivered.
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["deploy", "done"]]);
    expect(turns(result)[1]).toMatchObject({ at: 3100, userTexts: ["stop, wrong app"] });
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: stop, wrong app"]);
    const transcript = result.transcripts.s ?? [];
    expect(
      transcript.some((record) => record.role === "assistant" && record.runId === turns(result)[0]?.runId),
    ).toBe(false);
  });

  it("folds a steer the aborted run had not shown to the model into the interrupting turn", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "also bump the version"),
          msg(2000, "m3", "no, roll back instead", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "m2").disposition).toBe("steered");
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app"],
      ["also bump the version", "no, roll back instead"],
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: no, roll back instead"]);
  });
});

describe("cap and drop", () => {
  const busy = (config: string, ...lines: string[]) =>
    withTools(
      yaml`
        config: { queue: ${config} }
        ${inbound(msg(0, "m1", "deploy the app"), ...lines)}
      `,
    );

  it("drop old: the oldest waiting message makes room and is never run", async () => {
    const { result } = await play(
      busy(
        "{ mode: followup, cap: 2, drop: old }",
        msg(100, "m2", "two"),
        msg(200, "m3", "three"),
        msg(300, "m4", "four"),
      ),
    );
    expect(ack(result, "m4").disposition).toBe("queued");
    expect(events(result, "message.dropped")).toMatchObject([
      { messageId: "m2", reason: "queue cap: dropped oldest" },
    ]);
    expect(events(result, "message.acked").find((event) => event.messageId === "m4")).toMatchObject({
      dropped: ["m2"],
    });
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["three"], ["four"]]);
  });

  it("drop new: the newest message is rejected with the reason", async () => {
    const { result } = await play(
      busy(
        "{ mode: followup, cap: 2, drop: new }",
        msg(100, "m2", "two"),
        msg(200, "m3", "three"),
        msg(300, "m4", "four"),
      ),
    );
    expect(ack(result, "m4")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "m4").text).toBe("Not accepted: the queue is full (2 messages waiting).");
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["two"], ["three"]]);
  });

  it("summarize (the default): the dropped message reaches the next turn as a one-line note", async () => {
    const { result } = await play(
      busy(
        "{ mode: collect, cap: 2 }",
        msg(100, "m2", "two"),
        msg(200, "m3", "three"),
        msg(300, "m4", "four"),
      ),
    );
    expect(events(result, "message.dropped")).toMatchObject([
      { messageId: "m2", reason: "queue cap: summarized" },
    ]);
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["three", "four"]]);
    const note = (result.transcripts.s ?? []).find(
      (record) => record.role === "custom" && record.customType === "tiller.dropped-summary",
    );
    expect(note).toMatchObject({ details: { text: "[dropped while busy] two" } });
    // The note is stored with the turn that saw it, before that turn's user messages.
    const seqOf = (predicate: (record: ScenarioResult["transcripts"][string][number]) => boolean) =>
      (result.transcripts.s ?? []).find(predicate)?.seq ?? -1;
    expect(seqOf((record) => record === note)).toBeLessThan(
      seqOf((record) => record.role === "user" && record.text === "three"),
    );
  });
});

describe("duplicates", () => {
  it("acks a redelivered message id as a duplicate and never runs it again", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "hello there"),
          msg(100, "m1", "hello there"),
          msg(1000, "m1", "hello there"),
          msg(1100, "m2", "something else", "mode: followup"),
          msg(1200, "m2", "something else", "mode: followup"),
        ),
      ),
    );
    expect(acksOf(result, "m1").map((entry) => entry.disposition)).toEqual([
      "started",
      "duplicate",
      "duplicate",
    ]);
    expect(acksOf(result, "m2").map((entry) => entry.disposition)).toEqual(["started", "duplicate"]);
    expect(acksOf(result, "m1")[1]?.text).toBe("Already received this message; it is not run again.");
    expect(userTextsByTurn(result)).toEqual([["hello there"], ["something else"]]);
  });
});
