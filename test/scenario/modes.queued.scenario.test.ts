import { describe, expect, it } from "vitest";
import {
  ack,
  inbound,
  msg,
  play,
  playInMode,
  turns,
  userTextsByTurn,
  withTools,
  yaml,
} from "../support/modes.js";
import { eventsOf as events, replies } from "../support/scenario.js";

// One part of the modes scenarios; what they cover and share: test/support/modes.ts.

describe("followup", () => {
  it("starts a turn at once when the session is idle", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: followup"))));
    expect(ack(result, "m1")).toMatchObject({
      disposition: "started",
      mode: "followup",
      modeSource: "inline",
    });
  });

  it("gives each message its own turn, first in first out, whether it arrived while streaming or mid-tool", async () => {
    const { result } = await playInMode(
      "followup",
      msg(0, "m1", "deploy the app"),
      msg(50, "m2", "question two"),
      msg(1000, "m3", "question three"),
      msg(1001, "m4", "question four"),
    );
    expect(result.acks.map((entry) => [entry.messageId, entry.disposition])).toEqual([
      ["m1", "started"],
      ["m2", "queued"],
      ["m3", "queued"],
      ["m4", "queued"],
    ]);
    expect(ack(result, "m4").text).toContain("(2 ahead)");
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app"],
      ["question two"],
      ["question three"],
      ["question four"],
    ]);
    expect(replies(result).map((reply) => reply.text)).toEqual([
      "Re: deploy the app",
      "Re: question two",
      "Re: question three",
      "Re: question four",
    ]);
    // The first turn was not disturbed: its whole batch ran.
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done", "done"]);
  });

  it("waits for its own turn while the final is drafted, without making the draft stale", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "deploy the app"), msg(3300, "m2", "what changed?", "mode: followup"))),
    );
    expect(ack(result, "m2").disposition).toBe("queued");
    expect(events(result, "recheck.fired")).toEqual([]);
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["what changed?"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: deploy the app", "Re: what changed?"]);
  });

  it("waits behind a collect burst in its quiet window, then runs in arrival order", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "first question"),
          msg(100, "c1", "one", "mode: collect"),
          msg(500, "f1", "a follow-up", "mode: followup"),
          msg(600, "c2", "two", "mode: collect"),
        ),
      ),
    );
    expect(ack(result, "f1").disposition).toBe("queued");
    expect(userTextsByTurn(result)).toEqual([["first question"], ["one", "two"], ["a follow-up"]]);
  });

  it("is never overtaken: neither a newer follow-up nor a newer interrupt runs ahead of it", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(500, "f1", "first follow-up", "mode: followup"),
          msg(600, "f2", "second follow-up", "mode: followup"),
          msg(700, "i1", "urgent: stop that", "mode: interrupt"),
        ),
      ),
    );
    // The interrupt folds the waiting follow-ups into its turn, in arrival order.
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app"],
      ["first follow-up", "second follow-up", "urgent: stop that"],
    ]);
  });
});

describe("collect", () => {
  it("starts a turn at once when the session is idle", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: collect"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "started", mode: "collect" });
    expect(userTextsByTurn(result)).toEqual([["hello"]]);
  });

  it("answers a burst sent while the model streams as one turn that sees every message in order", async () => {
    const { result } = await playInMode(
      "collect",
      msg(0, "m1", "first question"),
      msg(100, "m2", "one"),
      msg(150, "m3", "two"),
      msg(200, "m4", "three"),
    );
    expect(result.acks.slice(1).map((entry) => entry.disposition)).toEqual([
      "collected",
      "collected",
      "collected",
    ]);
    expect(ack(result, "m2").text).toContain("once you pause");
    const collected = turns(result)[1]!;
    expect(collected.userTexts).toEqual(["one", "two", "three"]);
    // The burst waits for a quiet window of 500 ms after the turn that was busy ends (at 300).
    expect(collected.at).toBe(800);
    expect(replies(result)).toHaveLength(2);
  });

  it("collects messages sent mid-tool and waits for the quiet window after the turn ends", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "one", "mode: collect"),
          msg(2000, "m3", "two", "mode: collect"),
        ),
      ),
    );
    expect(result.toolCalls.map((call) => call.status)).toEqual(["done", "done"]);
    expect(turns(result).map((turn) => [turn.at, turn.userTexts])).toEqual([
      [0, ["deploy the app"]],
      [4000, ["one", "two"]],
    ]);
  });

  it("restarts the quiet window with each message of the burst, and honours debounceMs", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: collect, debounceMs: 1000 } }
          ${inbound(
            msg(0, "m1", "first question"),
            msg(100, "m2", "one"),
            msg(900, "m3", "two, inside the window"),
            msg(1800, "m4", "three, inside the restarted window"),
          )}
        `,
      ),
    );
    expect(turns(result).map((turn) => [turn.at, turn.userTexts])).toEqual([
      [0, ["first question"]],
      [2800, ["one", "two, inside the window", "three, inside the restarted window"]],
    ]);
  });

  it("drains the bursts of different channels separately", async () => {
    const { result } = await playInMode(
      "collect",
      msg(0, "m1", "first question"),
      msg(100, "t1", "telegram one"),
      msg(120, "w1", "web one", "", "s", "web"),
      msg(140, "t2", "telegram two"),
      msg(160, "w2", "web two", "", "s", "web"),
    );
    expect(userTextsByTurn(result)).toEqual([
      ["first question"],
      ["telegram one", "telegram two"],
      ["web one", "web two"],
    ]);
  });
});
