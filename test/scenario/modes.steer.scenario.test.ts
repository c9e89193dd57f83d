import { describe, expect, it } from "vitest";
import { ack, inbound, msg, play, turns, userTextsByTurn, withTools, yaml } from "../support/modes.js";
import { eventsOf as events, replies, transcript } from "../support/scenario.js";

// One part of the modes scenarios; what they cover and share: test/support/modes.ts.

describe("steer (the default)", () => {
  it("starts a turn at once when the session is idle", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello there"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "started", mode: "steer", modeSource: "default" });
    expect(userTextsByTurn(result)).toEqual([["hello there"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: hello there"]);
  });

  it("joins the turn while the model streams: the draft is re-checked with both messages, one reply", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "what is the weather in Paris"), msg(150, "m2", "actually Berlin"))),
    );
    expect(ack(result, "m2")).toMatchObject({ disposition: "steered" });
    expect(ack(result, "m2").text).toContain("next step");
    expect(turns(result)).toHaveLength(1);
    expect(result.modelCalls.at(-1)?.userTexts).toEqual(["what is the weather in Paris", "actually Berlin"]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: actually Berlin"]);
  });

  it("joins the turn mid-tool: the running tool finishes, the rest of the batch is skipped, the next model call sees it", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "deploy the app"), msg(1000, "m2", "wait, use the staging server"))),
    );
    const steer = ack(result, "m2");
    expect(steer.disposition).toBe("steered");
    expect(steer.text).toContain("deploy is running");
    expect(steer.text).toContain("cannot be cancelled");
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([
      ["deploy", "done"],
      ["notify", "skipped"],
    ]);
    const [first, second] = result.modelCalls;
    expect(first?.userTexts).toEqual(["deploy the app"]);
    expect(second).toMatchObject({
      at: 3100,
      call: 2,
      userTexts: ["deploy the app", "wait, use the staging server"],
    });
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: wait, use the staging server"]);
    expect(events(result, "steer.injected")).toMatchObject([{ messageIds: ["m2"] }]);
  });

  it("keeps a steered message's arrival: an event as it arrives, before its ack, and `arrivedAt` on its record", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "m1", "deploy the app"), msg(1000, "m2", "wait, use the staging server"))),
    );
    const received = events(result, "message.received");
    expect(received.map((event) => [event.at, event.messageId, event.text, event.channel])).toEqual([
      [0, "m1", "deploy the app", "telegram"],
      [1000, "m2", "wait, use the staging server", "telegram"],
    ]);
    const order = result.events.map(
      (event) => `${event.type} ${"messageId" in event ? event.messageId : ""}`,
    );
    expect(order.indexOf("message.received m2")).toBeLessThan(order.indexOf("message.acked m2"));
    // The turn took m2 in after the deploy (3100): the record is stored then, and says when it arrived.
    const m2 = transcript(result, "s").find((record) => record.role === "user" && record.messageId === "m2");
    expect(m2).toMatchObject({ arrivedAt: 1000, at: 3100 });
  });

  it("says a running cancellable tool can be cancelled, and lists the effects that already happened", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "audit the release"),
          msg(1000, "m2", "also check the changelog"),
          msg(4000, "m3", "search for the docs"),
          msg(5000, "m4", "only the public docs"),
        ),
      ),
    );
    // m1: notify 100–200 completes, then deploy runs 200–3200; m2 arrives mid-deploy.
    const midDeploy = ack(result, "m2");
    expect(midDeploy.text).toContain("deploy is running (it cannot be cancelled)");
    expect(midDeploy.text).toContain("Already done in this turn: notify.");
    // m3 starts a new turn (m1's was delivered); m4 arrives while the cancellable search runs.
    const midSearch = ack(result, "m4");
    expect(midSearch.disposition).toBe("steered");
    expect(midSearch.text).toContain("search is running (it can be cancelled)");
    expect(midSearch.text).not.toContain("Already done");
  });

  it("becomes a follow-up when the run can no longer take it (re-check limit reached while drafting)", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { staleReplyRecheck: { enabled: true, maxPasses: 0 } }
          ${inbound(msg(0, "m1", "first question"), msg(100, "m2", "second thought"))}
        `,
      ),
    );
    expect(ack(result, "m2").disposition).toBe("steered");
    // The draft of m1 was already written when m2 arrived and no re-check was left: m2 gets its own turn.
    expect(userTextsByTurn(result)).toEqual([["first question"], ["second thought"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: first question", "Re: second thought"]);
    expect(events(result, "recheck.skipped")).toMatchObject([{ reason: "limit" }]);
  });

  it("a steer the run could not take waits behind follow-ups queued before it", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { staleReplyRecheck: { enabled: true, maxPasses: 0 } }
          ${inbound(
            msg(0, "m1", "first question"),
            msg(50, "f1", "a follow-up", "mode: followup"),
            msg(100, "s1", "a late correction"),
            msg(400, "f2", "a later follow-up", "mode: followup"),
          )}
        `,
      ),
    );
    expect(userTextsByTurn(result)).toEqual([
      ["first question"],
      ["a follow-up"],
      ["a late correction"],
      ["a later follow-up"],
    ]);
  });

  it("does not join a recovery turn (it only resends an earlier reply): it waits for its own turn", async () => {
    const { result } = await play(yaml`
      config: { delivery: { visibleReplies: message_tool } }
      model:
        - when: { recovery: true, call: 1 }
          reply: { delayMs: 500, toolCalls: [{ name: message, args: { action: send, text: "The answer I owed you." } }] }
        - when: { hasToolResult: message }
          reply: { delayMs: 10, text: "" }
        - when: { latestUser: "quick" }
          reply: { delayMs: 100, toolCalls: [{ name: message, args: { action: send, text: "Quick answer." } }] }
        - reply: { delayMs: 100, text: "${"A substantive answer that was written but never sent. ".repeat(6)}" }
      ${inbound(msg(0, "m1", "explain it"), msg(300, "m2", "quick, are you there?"))}
    `);
    // m1's final is stranded at 100; the recovery turn resends it 100–600; m2 arrives in between.
    expect(events(result, "recovery.queued")).toHaveLength(1);
    expect(ack(result, "m2")).toMatchObject({ disposition: "queued", mode: "steer" });
    expect(ack(result, "m2").text).toContain("being resent first");
    const recovery = result.modelCalls.filter((call) => call.recovery);
    expect(recovery.every((call) => call.userTexts.length === 0)).toBe(true);
    expect(userTextsByTurn(result).at(-1)).toEqual(["quick, are you there?"]);
    expect(result.deliveries.map((delivery) => [delivery.kind, delivery.text])).toEqual([
      ["recovery", "The answer I owed you."],
      ["reply", "Quick answer."],
    ]);
  });

  it("is not switched off by a queued follow-up: a later steer still joins the running turn", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(500, "f1", "then write the release notes", "mode: followup"),
          msg(1000, "m3", "use the staging server"),
        ),
      ),
    );
    expect(ack(result, "f1").disposition).toBe("queued");
    expect(ack(result, "m3").disposition).toBe("steered");
    expect(userTextsByTurn(result)).toEqual([
      ["deploy the app", "use the staging server"],
      ["then write the release notes"],
    ]);
  });

  it("waits behind a collect burst during its quiet window instead of starting a turn", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "first question"),
          msg(100, "c1", "one", "mode: collect"),
          msg(200, "c2", "two", "mode: collect"),
          msg(500, "m4", "and a steer"),
        ),
      ),
    );
    // m1's reply lands at 300; the burst waits until 800; m4 arrives inside the window.
    expect(ack(result, "m4")).toMatchObject({ disposition: "queued" });
    expect(ack(result, "m4").text).toContain("answered first");
    expect(ack(result, "m4").text).not.toContain("finalized");
    expect(userTextsByTurn(result)).toEqual([["first question"], ["one", "two"], ["and a steer"]]);
  });
});
