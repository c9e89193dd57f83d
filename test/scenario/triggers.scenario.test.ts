import { describe, expect, it } from "vitest";
import type { ScenarioResult } from "../../src/scenario/runner.js";
import { play, replies } from "../support/scenario.js";

// Turns nobody typed, end to end through the scenario runner on the simulated clock: scheduled (cron)
// turns that overlap a user's message, heartbeats pre-empted and dropped, lanes of their own.

/** A scenario whose model answers every message after a second: "Re: <the newest message>". */
const answering = (scenario: string) =>
  `${scenario}model:\n  - reply: { delayMs: 1000, text: "Re: {{latestUser}}" }\n`;

const ackOf = (result: ScenarioResult, id: string) => result.acks.find((ack) => ack.messageId === id);
const endedOf = (result: ScenarioResult) =>
  result.events
    .filter((event) => event.type === "turn.ended")
    .map((event) => ({ runId: event.runId, status: event.status, reason: event.reason }));

describe("a scheduled turn that a user's message overlaps", () => {
  it("in steer mode: the cron turn's reply is drafted again with the user's message seen", async () => {
    const result = await play(
      answering(`
inbound:
  - { at: 0, session: "t:1", channel: t, id: c1, text: "Daily digest of the inbox", trigger: cron }
  - { at: 500, session: "t:1", channel: t, id: m1, text: "what is the deploy command?" }
`),
    );
    expect(ackOf(result, "c1")).toMatchObject({ disposition: "started", trigger: "cron" });
    const ack = ackOf(result, "m1");
    expect(ack).toMatchObject({ disposition: "steered" });
    expect(ack?.text).toContain("busy with a scheduled task");
    // The draft made before m1 was replaced: the one reply that went out answers m1.
    expect(replies(result).map((d) => d.text)).toEqual(["Re: what is the deploy command?"]);
    const events = result.events.filter((e) => e.type === "recheck.fired").map((e) => e.reason);
    expect(events).toEqual(["newer-message"]);
    expect(result.modelCalls.map((call) => call.trigger)).toEqual(["cron", "cron"]);
    expect(result.modelCalls.at(-1)?.userTexts).toContain("what is the deploy command?");
  });

  it("in followup mode: the user's message waits for its own turn, and the cron reply still saw it", async () => {
    const result = await play(
      answering(`
config: { queue: { mode: followup } }
inbound:
  - { at: 0, session: "t:1", channel: t, id: c1, text: "Daily digest of the inbox", trigger: cron }
  - { at: 500, session: "t:1", channel: t, id: m1, text: "what is the deploy command?" }
`),
    );
    expect(ackOf(result, "m1")).toMatchObject({ disposition: "queued" });
    expect(ackOf(result, "m1")?.text).toContain("busy with a scheduled task");
    const texts = replies(result).map((d) => d.text);
    // Two replies: the cron turn's (re-drafted once the user wrote) and the user's own turn.
    expect(texts).toEqual(["Re: what is the deploy command?", "Re: what is the deploy command?"]);
    expect(result.events.filter((e) => e.type === "recheck.fired").map((e) => e.reason)).toEqual([
      "newer-message",
    ]);
    expect(result.modelCalls.map((call) => call.trigger)).toEqual(["cron", "cron", "user"]);
    // The user's message is stored once, by its own turn.
    const users = result.transcripts["t:1"]!.flatMap((r) =>
      r.role === "user" && "text" in r ? [r.text] : [],
    );
    expect(users).toEqual(["Daily digest of the inbox", "what is the deploy command?"]);
  });
});

describe("a scheduled turn out of re-check passes", () => {
  it("is superseded rather than delivered when another user message came after its last draft", async () => {
    const result = await play(
      answering(`
inbound:
  - { at: 0, session: "t:1", channel: t, id: c1, text: "Daily digest", trigger: cron }
  - { at: 500, session: "t:1", channel: t, id: m1, text: "first question" }
  - { at: 1500, session: "t:1", channel: t, id: m2, text: "second question" }
`),
    );
    expect(endedOf(result).map((e) => [e.status, e.reason])).toEqual([
      ["aborted", "superseded by a newer user message"],
      ["done", undefined],
    ]);
    // Only the user's own turn replies, and it sees both messages.
    expect(replies(result).map((d) => d.text)).toEqual(["Re: second question"]);
    expect(result.modelCalls.at(-1)).toMatchObject({
      trigger: "user",
      userTexts: ["first question", "second question"],
    });
    // Each user message is stored once.
    const users = result.transcripts["t:1"]!.flatMap((r) =>
      r.role === "user" && "text" in r ? [r.text] : [],
    );
    expect(users).toEqual(["Daily digest", "first question", "second question"]);
  });
});

describe("heartbeats", () => {
  it("a user's message pre-empts a heartbeat turn: aborted, nothing delivered, the user answered", async () => {
    const result = await play(
      answering(`
inbound:
  - { at: 0, session: "t:1", channel: t, id: h1, text: "Heartbeat: anything to follow up?", trigger: heartbeat }
  - { at: 400, session: "t:1", channel: t, id: m1, text: "hello there" }
`),
    );
    expect(ackOf(result, "h1")).toMatchObject({ disposition: "started", trigger: "heartbeat" });
    expect(ackOf(result, "m1")).toMatchObject({ disposition: "interrupted" });
    expect(replies(result).map((d) => d.text)).toEqual(["Re: hello there"]);
    expect(endedOf(result).map((e) => [e.status, e.reason])).toEqual([
      ["aborted", "preempted"],
      ["done", undefined],
    ]);
  });

  it("a heartbeat that arrives while the session is busy is dropped and says why", async () => {
    const result = await play(
      answering(`
inbound:
  - { at: 0, session: "t:1", channel: t, id: m1, text: "hello there" }
  - { at: 300, session: "t:1", channel: t, id: h1, text: "Heartbeat", trigger: heartbeat }
`),
    );
    const ack = ackOf(result, "h1");
    expect(ack).toMatchObject({ disposition: "dropped", trigger: "heartbeat" });
    expect(ack?.text).toMatch(/busy/);
    expect(result.modelCalls.map((call) => call.trigger)).toEqual(["user"]);
    expect(replies(result).map((d) => d.text)).toEqual(["Re: hello there"]);
  });
});

describe("lanes of their own", () => {
  it("a cron turn runs in the cron lane and takes no main slot", async () => {
    const result = await play(
      answering(`
config: { lanes: { main: 1, cron: 1 } }
inbound:
  - { at: 0, session: "t:1", channel: t, id: c1, text: "digest", trigger: cron }
  - { at: 10, session: "t:2", channel: t, id: m1, text: "hi from two" }
`),
    );
    const started = result.events.filter((e) => e.type === "lane.started");
    expect(started.map((e) => [e.lane, e.session, e.waitedMs])).toEqual([
      ["cron", "t:1", 0],
      ["main", "t:2", 0],
    ]);
    const enqueued = result.events.filter((e) => e.type === "lane.enqueued").map((e) => e.priority);
    expect(enqueued).toEqual(["background", "foreground"]);
    // Both ran at once: the user's reply did not wait for the scheduled one.
    expect(replies(result).map((d) => [d.at, d.session])).toEqual([
      [1000, "t:1"],
      [1010, "t:2"],
    ]);
  });
});

describe("subagents", () => {
  it("a cron turn's subagent runs in cron-nested, so the outer job holding the one cron slot finishes", async () => {
    const result = await play(`
config: { lanes: { cron: 1 } }
model:
  - when: { session: "t:1:sub:1" }
    reply: { delayMs: 300, text: "three open tickets" }
  - when: { call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: research, args: {} }] }
  - reply: { delayMs: 100, text: "Digest: {{latestUser}}" }
tools:
  research: { cancellable: true, subagent: { text: "count the open tickets" } }
inbound:
  - { at: 0, session: "t:1", channel: t, id: c1, text: "daily digest", trigger: cron }
`);
    const lanes = result.events.filter((e) => e.type === "lane.started").map((e) => [e.lane, e.session]);
    expect(lanes).toEqual([
      ["cron", "t:1"],
      ["cron-nested", "t:1:sub:1"],
    ]);
    const child = result.modelCalls.find((call) => call.session === "t:1:sub:1");
    expect(child).toMatchObject({ trigger: "subagent", userTexts: ["count the open tickets"] });
    // The child's final came back as the tool's result and never reached a channel.
    const tool = result.transcripts["t:1"]!.find((r) => r.role === "toolResult");
    expect(tool).toMatchObject({ status: "done", result: "three open tickets" });
    expect(result.deliveries.map((d) => [d.session, d.kind])).toEqual([["t:1", "reply"]]);
  });

  it("a subagent is cancelled with its parent when a user's message interrupts the parent", async () => {
    const result = await play(`
model:
  - when: { session: "t:1:sub:1" }
    reply: { delayMs: 5000, text: "late research" }
  - when: { latestUser: "research" }
    reply: { delayMs: 100, toolCalls: [{ name: research, args: {} }] }
  - reply: { delayMs: 100, text: "Re: {{latestUser}}" }
tools:
  research: { cancellable: true, subagent: { text: "dig deep" } }
inbound:
  - { at: 0, session: "t:1", channel: t, id: m1, text: "research the market" }
  - { at: 1000, session: "t:1", channel: t, id: m2, text: "stop, just say hi", mode: interrupt }
`);
    const ended = result.events.filter((e) => e.type === "turn.ended").map((e) => [e.session, e.status]);
    expect(ended).toContainEqual(["t:1:sub:1", "aborted"]);
    const sub = result.events.find((e) => e.type === "subagent.finished");
    expect(sub).toMatchObject({ session: "t:1:sub:1", status: "aborted", at: 1000 });
    expect(result.deliveries.filter((d) => d.kind === "reply").map((d) => d.text)).toEqual([
      "Re: stop, just say hi",
    ]);
    // No model call of the child ran past the interrupt.
    expect(
      result.events.some((e) => e.type === "model.ended" && e.session === "t:1:sub:1" && e.status === "done"),
    ).toBe(false);
  });
});
