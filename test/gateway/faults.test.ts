import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelProvider, ModelRequest } from "../../src/ports/model.js";
import type { ExpectedHead, RecordBody } from "../../src/ports/store.js";
import type { ToolDefinition } from "../../src/ports/tool.js";

// Faulty adapters and racing commands: whatever breaks, the user hears back, the transcript holds
// only what belongs to its conversation, and the operator sees why.

const FAILED = "I could not finish this reply because of an internal error. Please try again.";

/** A memory store whose appends fail while `failing` says so. */
class FlakyStore extends MemoryStore {
  failing: ((records: RecordBody[]) => boolean) | null = null;
  override async append(session: string, records: RecordBody[], expect: ExpectedHead) {
    if (this.failing?.(records)) throw new Error("ENOSPC: no space left on device");
    return super.append(session, records, expect);
  }
}

function setup(options: {
  model: (clock: SimulatedClock) => ModelProvider;
  tools?: ToolDefinition[];
  config?: object;
  sendDelayMs?: number;
}) {
  const clock = new SimulatedClock();
  const store = new FlakyStore({ now: () => clock.now() });
  const loopback = new LoopbackChannel({ now: () => clock.now() });
  const channel = {
    sent: loopback.sent,
    async send(message: Parameters<LoopbackChannel["send"]>[0]) {
      if (options.sendDelayMs)
        await new Promise((resolve) => clock.setTimeout(() => resolve(null), options.sendDelayMs!));
      return loopback.send(message);
    },
  };
  const gateway = createGateway({
    config: options.config ?? {},
    model: options.model(clock),
    tools: options.tools ?? [],
    channels: { web: channel },
    clock,
    store,
    logger: silentLogger,
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const say = (id: string, text: string) => gateway.receive({ session: "a", channel: "web", id, text });
  return { clock, store, channel, gateway, events, idle, say };
}

/** A model that always calls the tool `stuck`, and that tool, which never settles. */
function askingForStuckTool(cancellable: boolean) {
  return {
    model: () => ({
      async complete() {
        return { text: "", toolCalls: [{ callId: "c1", name: "stuck", args: {} }] };
      },
    }),
    tools: [{ name: "stuck", cancellable, execute: () => new Promise<never>(() => {}) }],
  };
}

const echo = (clock: SimulatedClock) =>
  new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock);

describe("faults", () => {
  it("a store that refuses the turn's records fails the turn as STORE_FAILED and the user gets the notice", async () => {
    const { store, channel, events, idle, say, gateway } = setup({ model: echo });
    await gateway.start();
    store.failing = () => true;
    await say("m1", "hello");
    await idle();
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      status: "failed",
      error: { code: "STORE_FAILED" },
    });
    expect(channel.sent.map((sent) => sent.text)).toEqual([FAILED]);
    store.failing = null;
    await say("m2", "again");
    await idle();
    expect(channel.sent.at(-1)?.text).toBe("Re: again");
    await gateway.stop();
  });

  it("a final sent but not stored is still reported delivered, with the storage failure beside it", async () => {
    const { store, channel, events, idle, say, gateway } = setup({ model: echo });
    await gateway.start();
    store.failing = (records) => records.some((record) => record.role === "assistant");
    await say("m1", "hello");
    await idle();
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: hello"]);
    const types = events.map((event) => event.type);
    expect(types).toContain("final.storeFailed");
    expect(types).toContain("final.delivered");
    await gateway.stop();
  });

  it("/new while a reply is still being sent keeps that old turn out of the new conversation", async () => {
    const { store, channel, events, idle, say, gateway, clock } = setup({ model: echo, sendDelayMs: 200 });
    await gateway.start();
    await say("m1", "old topic");
    await clock.advance(150, () => gateway.isBusy); // the reply is on its way
    await say("m2", "/new");
    await say("m3", "new topic");
    await idle();
    const window = await store.readWindow("a");
    expect(
      window.map((record) =>
        record.role === "user" || record.role === "assistant" ? record.text : record.role,
      ),
    ).toEqual(["new topic", "custom", "Re: new topic"]);
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: old topic", "Re: new topic"]);
    // The old reply did reach the user: that is reported, though no conversation holds it any more.
    const delivered = events.filter((event) => event.type === "final.delivered");
    expect(delivered).toHaveLength(2);
    expect(delivered[0]).toMatchObject({ stored: false });
    await gateway.stop();
  });

  it("a turn stopped by the lane timeout tells the user it ran out of time", async () => {
    const { channel, events, idle, say, gateway } = setup({
      model: (clock) => new ScriptedModel([{ reply: { delayMs: 60_000, text: "late" } }], clock),
      config: { laneTimeoutMs: 5_000 },
    });
    await gateway.start();
    await say("m1", "slow question");
    await idle();
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      status: "aborted",
      reason: "the turn ran past the lane timeout",
    });
    expect(channel.sent.map((sent) => sent.kind)).toEqual(["notice"]);
    expect(channel.sent[0]!.text).toContain("in time");
    await gateway.stop();
  });

  it("a tool result with no JSON form is the tool's failure, told to the model; the turn goes on", async () => {
    let calls = 0;
    const seen: unknown[] = [];
    const { channel, store, idle, say, gateway } = setup({
      model: () => ({
        async complete(request: ModelRequest) {
          if (++calls === 1) return { text: "", toolCalls: [{ callId: "c1", name: "count", args: {} }] };
          seen.push(request.context.find((message) => message.role === "toolResult"));
          return { text: "Counted.", toolCalls: [] };
        },
      }),
      tools: [{ name: "count", cancellable: false, execute: async () => ({ total: 10n }) }],
    });
    await gateway.start();
    await say("m1", "count them");
    await idle();
    expect(seen[0]).toMatchObject({
      status: "failed",
      result: { error: expect.stringContaining("cannot be stored as JSON") },
    });
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Counted."]);
    const records = await store.read("a");
    expect(records.filter((record) => record.role === "toolResult")).toHaveLength(1);
    await gateway.stop();
  });

  it("errors that are not Error objects keep their message", async () => {
    const { events, idle, say, gateway } = setup({
      model: () => ({
        async complete() {
          throw { code: 429, message: "too many requests" };
        },
      }),
    });
    await gateway.start();
    await say("m1", "hello");
    await idle();
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      error: { message: "too many requests" },
    });
    await gateway.stop();
  });

  it("a channel that never answers is aborted at delivery.sendTimeoutMs, given up after sendAbortGraceMs, and not resent: the session goes on", async () => {
    const clock = new SimulatedClock();
    const events: TillerEvent[] = [];
    const gateway = createGateway({
      config: { delivery: { sendTimeoutMs: 1_000, sendAbortGraceMs: 2_000 } },
      model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
      channels: { web: { send: () => new Promise(() => {}) } },
      clock,
      logger: silentLogger,
    });
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hello" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    expect(events.find((event) => event.type === "delivery.failed")).toMatchObject({
      reason: "the channel did not settle within 3000 ms (it was aborted after 1000 ms)",
      outcome: "unknown",
    });
    expect(events.find((event) => event.type === "delivery.failed")?.at).toBe(3100);
    expect(events.map((event) => event.type)).toContain("final.undelivered");
    expect(events.map((event) => event.type)).not.toContain("recovery.queued");
    expect(gateway.inspectSession("a")?.state).toBe("idle");
    // A second message is answered (or at least tried) instead of waiting forever behind the first.
    await gateway.receive({ session: "a", channel: "web", id: "m2", text: "still there?" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    expect(
      events.filter((event) => event.type === "model.called").map((event) => event.latestUser),
    ).toContain("still there?");
    await gateway.stop();
  });

  it.each([
    [false, "it may still be running"],
    [true, "it was cancelled"],
  ])(
    "a tool that never settles (cancellable: %s) is given up after limits.toolTimeoutMs",
    async (cancellable, outcome) => {
      let calls = 0;
      const signals: AbortSignal[] = [];
      const { channel, events, idle, say, gateway, clock } = setup({
        config: { limits: { toolTimeoutMs: 5_000 } },
        model: () => ({
          async complete() {
            return ++calls === 1
              ? { text: "", toolCalls: [{ callId: "c1", name: "stuck", args: {} }] }
              : { text: "The tool did not answer.", toolCalls: [] };
          },
        }),
        tools: [
          {
            name: "stuck",
            cancellable,
            execute: (_args, context) => {
              signals.push(context.signal);
              return new Promise(() => {}); // ignores its signal too
            },
          },
        ],
      });
      await gateway.start();
      await say("m1", "run it");
      await idle();
      expect(clock.now()).toBe(5_000);
      expect(events.find((event) => event.type === "tool.ended")).toMatchObject({ status: "failed" });
      expect(events.find((event) => event.type === "tool.timedOut")).toMatchObject({
        name: "stuck",
        timeoutMs: 5_000,
      });
      expect(signals[0]!.aborted).toBe(cancellable);
      expect(channel.sent.map((sent) => sent.text)).toEqual(["The tool did not answer."]);
      const stored = (await gateway.store.read("a")).find((record) => record.role === "toolResult");
      expect(JSON.stringify(stored)).toContain(outcome);
      await gateway.stop();
    },
  );

  it("/stop while a tool that cannot be cancelled hangs: the turn ends once the tool is given up", async () => {
    const { events, idle, say, gateway, clock } = setup({
      config: { limits: { toolTimeoutMs: 5_000 } },
      ...askingForStuckTool(false),
    });
    await gateway.start();
    await say("m1", "run it");
    await clock.advance(1_000, () => gateway.isBusy); // the tool runs
    expect(gateway.inspectSession("a")?.run?.currentTool).toBe("stuck");
    await say("m2", "/stop");
    await idle();
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      status: "aborted",
      at: 5_000,
    });
    expect(gateway.inspectSession("a")?.state).toBe("idle");
    await gateway.stop();
  });

  it("a model that never answers fails its turn after limits.modelTimeoutMs, and its call is aborted", async () => {
    const signals: AbortSignal[] = [];
    const { channel, events, idle, say, gateway, clock } = setup({
      config: { limits: { modelTimeoutMs: 5_000 } },
      model: () => ({
        complete(request: ModelRequest) {
          signals.push(request.signal);
          return new Promise(() => {});
        },
      }),
    });
    await gateway.start();
    await say("m1", "hello?");
    await idle();
    expect(clock.now()).toBe(5_000);
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({
      status: "failed",
      error: { code: "MODEL_TIMEOUT", message: "the model did not answer within 5000 ms" },
    });
    expect(signals[0]!.aborted).toBe(true);
    expect(channel.sent.map((sent) => sent.text)).toEqual([FAILED]);
    await gateway.stop(); // nothing is left running: stop() does not wait forever
  });

  it("a marker that cannot be stored queues no recovery, and the user gets the could-not-deliver notice", async () => {
    const clock = new SimulatedClock();
    const store = new FlakyStore({ now: () => clock.now() });
    const notices: string[] = [];
    let sends = 0;
    const events: TillerEvent[] = [];
    const gateway = createGateway({
      model: new ScriptedModel([{ reply: { delayMs: 10, text: "A long answer. ".repeat(30) } }], clock),
      channels: {
        web: {
          async send(message) {
            // The reply fails; the notice after it goes through.
            if (++sends === 1) throw new Error("channel down");
            notices.push(message.text);
            return { messageId: `n${sends}` };
          },
        },
      },
      clock,
      store,
      logger: silentLogger,
    });
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    store.failing = (records) => records.some((record) => record.role === "custom");
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "explain it all" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    const types = events.map((event) => event.type);
    expect(types).toContain("marker.storeFailed");
    expect(types).not.toContain("recovery.queued");
    expect(notices).toEqual([
      "I wrote a reply but could not deliver it. Please ask again if you still need it.",
    ]);
    await gateway.stop();
  });

  it("a cancellable tool that ignores its signal leaves no deadline behind once its turn is stopped", async () => {
    const { events, idle, say, gateway, clock } = setup({
      ...askingForStuckTool(true),
    });
    await gateway.start();
    await say("m1", "run it");
    await clock.advance(1_000, () => gateway.isBusy);
    await say("m2", "/stop");
    await idle();
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({ status: "aborted" });
    expect(events.map((event) => event.type)).not.toContain("tool.timedOut");
    expect(clock.now()).toBeLessThan(600_000); // no 10-minute timer was left to run
    await gateway.stop();
  });

  it("a history that cannot be read fails the turn as STORE_FAILED under its own run id", async () => {
    const clock = new SimulatedClock();
    const store = new FlakyStore({ now: () => clock.now() });
    const channel = new LoopbackChannel({ now: () => clock.now() });
    store.readWindow = async () => {
      throw new Error("EIO: read failed");
    };
    const gateway = createGateway({
      model: echo(clock),
      channels: { web: channel },
      clock,
      store,
      logger: silentLogger,
    });
    const events: TillerEvent[] = [];
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hello" }).catch(() => undefined);
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    const ended = events.find((event) => event.type === "turn.ended");
    expect(ended).toMatchObject({
      status: "failed",
      error: { code: "STORE_FAILED", message: "the turn's history could not be read: EIO: read failed" },
    });
    expect(String(ended!.runId)).toMatch(/^a#/);
    expect(channel.sent.map((sent) => sent.text)).toEqual([FAILED]);
    await gateway.stop();
  });
});
