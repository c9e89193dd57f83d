import { describe, expect, it } from "vitest";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { ack, inbound, msg, play, playInMode, userTextsByTurn, withTools, yaml } from "../support/modes.js";
import { eventsOf as events, replies } from "../support/scenario.js";

// One part of the modes scenarios; what they cover and share: test/support/modes.ts.

describe("control commands", () => {
  const neverSentToTheModel = (result: ScenarioResult) => {
    for (const call of result.modelCalls) for (const text of call.userTexts) expect(text).not.toMatch(/^\//);
    for (const records of Object.values(result.transcripts)) {
      for (const record of records) if (record.role === "user") expect(record.text).not.toMatch(/^\//);
    }
  };

  it("/queue sets this session's mode and settings; /queue reset returns to the configured ones", async () => {
    const { result } = await playInMode(
      "steer",
      msg(0, "q1", "/queue followup cap:5 drop:new"),
      msg(10, "m1", "deploy the app"),
      msg(500, "m2", "question two"),
      msg(600, "o1", "other session", "", "other"),
      msg(4000, "q2", "/queue reset"),
      msg(4100, "m3", "question three"),
    );
    expect(ack(result, "q1").text).toContain("followup");
    expect(ack(result, "m1")).toMatchObject({ mode: "followup", modeSource: "session" });
    expect(ack(result, "m2")).toMatchObject({
      disposition: "queued",
      mode: "followup",
      modeSource: "session",
    });
    expect(ack(result, "o1")).toMatchObject({ mode: "steer", modeSource: "global" });
    expect(ack(result, "q2").text).toContain("back to the defaults");
    expect(ack(result, "m3")).toMatchObject({ mode: "steer", modeSource: "global" });
    neverSentToTheModel(result);
  });

  it("/queue with an unknown option is rejected with what was wrong", async () => {
    const { result } = await play(
      withTools(inbound(msg(0, "q1", "/queue sometimes"), msg(10, "q2", "/queue collect cap:0"))),
    );
    expect(ack(result, "q1")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "q1").text).toContain("sometimes");
    expect(ack(result, "q2")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "q2").text).toContain("cap");
    expect(result.modelCalls).toEqual([]);
  });

  it("/stop aborts the running turn and drops what waits; nothing of it is delivered", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "search the archive"),
          msg(500, "f1", "and then summarise it", "mode: followup"),
          msg(1000, "x1", "/stop"),
          msg(5000, "m2", "new question"),
        ),
      ),
    );
    expect(ack(result, "x1").text).toBe("Stopping the current reply and dropping 1 waiting message(s).");
    expect(events(result, "message.dropped")).toMatchObject([
      { messageId: "f1", reason: "cleared by /stop" },
    ]);
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["search", "cancelled"]]);
    expect(userTextsByTurn(result)).toEqual([["search the archive"], ["new question"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: new question"]);
    neverSentToTheModel(result);
  });

  it("/stop also drops a steer the stopped run had not shown to the model", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "also bump the version"),
          msg(2000, "x1", "/stop"),
        ),
      ),
    );
    expect(events(result, "message.dropped").map((event) => event.messageId)).toEqual(["m2"]);
    // The run held it back, and said so at once: the /stop's ack counts it.
    expect(ack(result, "x1").text).toContain("dropping 1 waiting message(s)");
    expect(userTextsByTurn(result)).toEqual([["deploy the app"]]);
    expect(replies(result)).toEqual([]);
  });

  it("a message sent after /stop, while a tool that cannot be cancelled finishes, is still answered", async () => {
    const { result } = await play(
      withTools(
        inbound(msg(0, "m1", "deploy the app"), msg(1000, "x1", "/stop"), msg(1500, "m2", "are you done?")),
      ),
    );
    // Its ack does not promise the stopped run reads it "before any further step".
    expect(ack(result, "m2").text).toBe(
      "Got it. The current reply is being stopped; deploy cannot be cancelled and finishes first, then I answer this.",
    );
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["aborted", "done"]);
    expect(events(result, "message.dropped")).toEqual([]);
    expect(result.toolCalls.map((call) => [call.name, call.status])).toEqual([["deploy", "done"]]);
    expect(userTextsByTurn(result)).toEqual([["deploy the app"], ["are you done?"]]);
    expect(replies(result).map((reply) => reply.text)).toEqual(["Re: are you done?"]);
  });

  it("/stop with nothing running says so and stops nothing", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello"), msg(1000, "x1", "/stop"))));
    expect(ack(result, "x1").text).toBe("Nothing was running.");
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["done"]);
  });

  it("/new starts a fresh context: the transcript revision bumps and earlier messages stay out of it", async () => {
    const { result } = await play(
      withTools(
        inbound(msg(0, "m1", "my name is Ada"), msg(1000, "n1", "/new"), msg(2000, "m2", "what is my name")),
      ),
    );
    expect(ack(result, "n1").text).toContain("fresh conversation");
    expect(events(result, "session.reset")).toHaveLength(1);
    const transcript = result.transcripts.s ?? [];
    const revisionOf = (text: string) =>
      transcript.find((record) => record.role === "user" && record.text === text)?.revision;
    expect(revisionOf("what is my name")).toBeGreaterThan(
      revisionOf("my name is Ada") ?? Number.POSITIVE_INFINITY,
    );
    expect(userTextsByTurn(result)).toEqual([["my name is Ada"], ["what is my name"]]);
    neverSentToTheModel(result);
  });
});

describe("mode resolution", () => {
  it("inline beats session beats channel beats global beats the default, and the ack names the source", async () => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: followup, byChannel: { web: collect } } }
          ${inbound(
            msg(0, "g1", "global", "", "a"),
            msg(0, "c1", "channel", "", "b", "web"),
            msg(0, "x1", "/queue interrupt", "", "c"),
            msg(10, "s1", "session", "", "c", "web"),
            msg(20, "i1", "inline", "mode: steer", "c", "web"),
          )}
        `,
      ),
    );
    expect(ack(result, "g1")).toMatchObject({ mode: "followup", modeSource: "global" });
    expect(ack(result, "c1")).toMatchObject({ mode: "collect", modeSource: "channel" });
    expect(ack(result, "s1")).toMatchObject({ mode: "interrupt", modeSource: "session" });
    expect(ack(result, "i1")).toMatchObject({ mode: "steer", modeSource: "inline" });
    const { result: bare } = await play(withTools(inbound(msg(0, "d1", "default"))));
    expect(ack(bare, "d1")).toMatchObject({ mode: "steer", modeSource: "default" });
  });

  it.each([
    ["steering", "steer"],
    ["queue", "steer"],
    ["follow-up", "followup"],
    ["follow-ups", "followup"],
    ["followups", "followup"],
    ["steer-backlog", "followup"],
    ["coalesce", "collect"],
    ["abort", "interrupt"],
    ["interrupts", "interrupt"],
  ])("understands the alias %s as %s inline, in the config and in /queue", async (alias, mode) => {
    const { result } = await play(
      withTools(
        yaml`
          config: { queue: { mode: ${alias}, byChannel: { web: ${alias} } } }
          ${inbound(
            msg(0, "i1", "inline", `mode: ${alias}`, "a"),
            msg(0, "g1", "global", "", "b"),
            msg(0, "c1", "channel", "", "c", "web"),
            msg(0, "x1", `/queue ${alias}`, "", "d"),
            msg(10, "s1", "session", "", "d"),
          )}
        `,
      ),
    );
    expect(ack(result, "i1")).toMatchObject({ mode, modeSource: "inline" });
    expect(ack(result, "g1")).toMatchObject({ mode, modeSource: "global" });
    expect(ack(result, "c1")).toMatchObject({ mode, modeSource: "channel" });
    expect(ack(result, "s1")).toMatchObject({ mode, modeSource: "session" });
  });

  it("rejects an unknown inline mode and says which", async () => {
    const { result } = await play(withTools(inbound(msg(0, "m1", "hello", "mode: sometimes"))));
    expect(ack(result, "m1")).toMatchObject({ disposition: "rejected" });
    expect(ack(result, "m1").text).toContain('unknown queue mode "sometimes"');
    expect(result.modelCalls).toEqual([]);
  });
});

describe("acks", () => {
  it("every inbound message of a busy mixed session gets exactly one readable ack, in arrival order", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(100, "m2", "use staging"),
          msg(200, "m3", "then tell me", "mode: followup"),
          msg(300, "m4", "and also", "mode: collect"),
          msg(300, "m4", "and also", "mode: collect"),
          msg(400, "x1", "/queue collect"),
          msg(500, "m5", "collected"),
          msg(600, "m6", "stop everything", "mode: interrupt"),
          msg(700, "x2", "/stop"),
        ),
      ),
    );
    expect(result.acks.map((entry) => entry.messageId)).toEqual([
      "m1",
      "m2",
      "m3",
      "m4",
      "m4",
      "x1",
      "m5",
      "m6",
      "x2",
    ]);
    expect(result.acks.map((entry) => entry.disposition)).toEqual([
      "started",
      "steered",
      "queued",
      "collected",
      "duplicate",
      expect.any(String),
      "collected",
      "interrupted",
      expect.any(String),
    ]);
  });

  it("a steer ack never claims that work stopped, and an interrupt ack only where the turn was aborted", async () => {
    const { result } = await play(
      withTools(
        inbound(
          msg(0, "m1", "deploy the app"),
          msg(1000, "m2", "stop deploying"),
          msg(5000, "m3", "search the archive"),
          msg(6000, "m4", "cancel that", "mode: interrupt"),
        ),
      ),
    );
    expect(ack(result, "m2").text).not.toMatch(/stopping|stopped|cancelling/i);
    expect(ack(result, "m4").text).toMatch(/^Stopping the current reply/);
    expect(events(result, "turn.ended").map((event) => event.status)).toEqual(["done", "aborted", "done"]);
  });
});
