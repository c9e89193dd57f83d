import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { parseConfig } from "../../src/config.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import type { ToolDefinition } from "../../src/index.js";
import { ROLLED_BACK } from "../../src/policy/turn-context.js";
import { sleep } from "../../src/ports/clock.js";
import type { ModelProvider, ModelRequest } from "../../src/ports/model.js";

// The `reject` and `rollback` queue modes through the gateway: a refused message changes nothing and
// may be sent again; a rolled-back turn's messages and records never reach a later model call, also
// after a restart on the same store, and the ack names what the turn already did.

function setup(store = new MemoryStore(), clock = new SimulatedClock()) {
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const requests: ModelRequest[] = [];
  // "notify" then the slow "deploy" for "release …"; any other message is answered in 300 ms.
  const model: ModelProvider = {
    async complete(request) {
      requests.push(request);
      const latest = [...request.context].reverse().find((message) => message.role === "user");
      const text = latest?.role === "user" ? latest.text : "";
      const inTurn = request.context.slice(request.turnStart);
      await sleep(clock, 100, request.signal);
      if (text.startsWith("release") && !inTurn.some((message) => message.role === "toolResult"))
        return {
          text: "",
          toolCalls: [
            { callId: "c1", name: "notify", args: {} },
            { callId: "c2", name: "deploy", args: {} },
          ],
        };
      await sleep(clock, 200, request.signal);
      return { text: `Re: ${text}`, toolCalls: [] };
    },
  };
  const tool = (name: string, ms: number): ToolDefinition => ({
    name,
    description: name,
    parameters: { type: "object", properties: {} },
    cancellable: true,
    async execute(_args, { signal }) {
      await sleep(clock, ms, signal);
      return `${name} done`;
    },
  });
  const gateway = createGateway({
    model,
    tools: [tool("notify", 100), tool("deploy", 3000)],
    channels: { web: channel },
    clock,
    store,
  });
  const say = (id: string, text: string, mode?: string) =>
    gateway.receive({ session: "a", channel: "web", id, text, ...(mode ? { mode } : {}) });
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const userTexts = (request: ModelRequest) =>
    request.context.flatMap((message) => (message.role === "user" ? [message.text] : []));
  return { clock, channel, gateway, requests, say, idle, store, userTexts };
}

describe("reject mode", () => {
  it("refuses a message while a turn runs, with reason busy, and takes it when sent again later", async () => {
    const { gateway, say, idle, channel, clock } = setup();
    await gateway.start();
    await say("m1", "hello");
    await clock.advance(50);
    const refused = await say("m2", "are you there?", "reject");
    expect(refused).toMatchObject({ disposition: "rejected", reason: "busy", mode: "reject" });
    expect(refused.text).toMatch(/busy/);
    await idle();
    // Sent again once the session is idle, the same id is neither a duplicate nor refused.
    expect(await say("m2", "are you there?", "reject")).toMatchObject({ disposition: "started" });
    await idle();
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: hello", "Re: are you there?"]);
    await gateway.stop();
  });

  it("is set for a session with /queue reject, and in the config for every session", async () => {
    const { gateway, say, idle, clock } = setup();
    await gateway.start();
    expect(await say("c1", "/queue reject")).toMatchObject({ disposition: "control" });
    await say("m1", "hello");
    await clock.advance(50);
    expect(await say("m2", "still there?")).toMatchObject({
      disposition: "rejected",
      reason: "busy",
      mode: "reject",
      modeSource: "session",
    });
    await idle();
    await gateway.stop();
    expect(parseConfig({ queue: { mode: "reject", byChannel: { web: "rollback" } } }).queue).toMatchObject({
      mode: "reject",
      byChannel: { web: "rollback" },
    });
    expect(() => parseConfig({ queue: { mode: "refuse-all" } })).toThrow(/queue\.mode/);
  });
});

describe("rollback mode", () => {
  it("cuts the turn off and hides it from every later model call, naming what already happened", async () => {
    const { gateway, say, idle, clock, requests, store, userTexts } = setup();
    await gateway.start();
    await say("m1", "release version 2");
    await clock.advance(500); // notify is done (100–200), deploy runs (200–3200)
    const ack = await say("m2", "wait, what changed since version 1?", "rollback");
    expect(ack).toMatchObject({ disposition: "interrupted", mode: "rollback", completedEffects: ["notify"] });
    expect(ack.text).toMatch(/not undone: notify/);
    await idle();
    const last = requests.at(-1)!;
    expect(userTexts(last)).toEqual(["wait, what changed since version 1?"]);
    expect(last.context.some((message) => message.role === "toolCall" || message.role === "toolResult")).toBe(
      false,
    );
    // The records are kept, as hidden ones, after a marker naming the turn.
    const records = await store.read("a");
    expect(records.some((record) => record.role === "user" && record.messageId === "m1")).toBe(true);
    expect(
      records.find((record) => record.role === "custom" && record.customType === ROLLED_BACK),
    ).toMatchObject({
      display: false,
      details: { messageIds: ["m1"] },
    });

    // A later turn, and a restarted gateway on the same store, still never see it.
    await say("m3", "thanks");
    await idle();
    expect(userTexts(requests.at(-1)!)).toEqual(["wait, what changed since version 1?", "thanks"]);
    await gateway.stop();
    const again = setup(store, clock);
    await again.gateway.start();
    await again.say("m4", "one more thing");
    await again.idle();
    expect(again.userTexts(again.requests.at(-1)!)).toEqual([
      "wait, what changed since version 1?",
      "thanks",
      "one more thing",
    ]);
    await again.gateway.stop();
  });

  it("an interrupt, for comparison, keeps the cut-off turn in later model calls", async () => {
    const { gateway, say, idle, clock, requests, userTexts } = setup();
    await gateway.start();
    await say("m1", "release version 2");
    await clock.advance(500);
    await say("m2", "wait, what changed?", "interrupt");
    await idle();
    expect(userTexts(requests.at(-1)!)).toEqual(["release version 2", "wait, what changed?"]);
    await gateway.stop();
  });
});

describe("edits (editOf)", () => {
  it("replaces a queued message: only the edit is answered", async () => {
    const { gateway, say, idle, clock, requests, userTexts } = setup();
    await gateway.start();
    await say("m1", "hello");
    await clock.advance(50);
    await say("m2", "what is the capitl of France?", "followup");
    const ack = await gateway.receive({
      session: "a",
      channel: "web",
      id: "m3",
      text: "what is the capital of France?",
      editOf: "m2",
    });
    expect(ack).toMatchObject({ disposition: "queued", messageId: "m3" });
    await idle();
    expect(userTexts(requests.at(-1)!)).toEqual(["hello", "what is the capital of France?"]);
    expect(requests.flatMap(userTexts)).not.toContain("what is the capitl of France?");
    await gateway.stop();
  });

  it("steers an edit of a message in the running turn in as a correction (steer.injected edit: true)", async () => {
    const { gateway, say, idle, clock, requests, userTexts } = setup();
    const injected: unknown[] = [];
    gateway.subscribe((event) => {
      if (event.type === "steer.injected") injected.push(event);
    });
    await gateway.start();
    await say("m1", "release versoin 2");
    await clock.advance(500);
    // A platform's edit keeps the message's own id.
    const ack = await gateway.receive({
      session: "a",
      channel: "web",
      id: "m1",
      text: "release version 3",
      editOf: "m1",
    });
    expect(ack).toMatchObject({ disposition: "steered" });
    await idle();
    expect(injected).toEqual([expect.objectContaining({ edit: true, messageIds: [ack.messageId] })]);
    expect(userTexts(requests.at(-1)!)).toEqual(["release versoin 2", "release version 3"]);
    await gateway.stop();
  });

  it("answers an edit of a message whose turn ended as a new turn", async () => {
    const { gateway, say, idle, channel } = setup();
    await gateway.start();
    await say("m1", "hello");
    await idle();
    const ack = await gateway.receive({
      session: "a",
      channel: "web",
      id: "m1",
      text: "hello there",
      editOf: "m1",
    });
    expect(ack.disposition).toBe("started");
    await idle();
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: hello", "Re: hello there"]);
    await gateway.stop();
  });
});
