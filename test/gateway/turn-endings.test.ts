import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import type { Logger } from "../../src/logger.js";
import type { ModelProvider } from "../../src/ports/model.js";

// A turn that does not end with a final says why, where an operator looks: `turn.ended` carries the
// error of a failed turn and the reason of an aborted one, a failure is logged, and `explain()` tells
// the message's story up to it. A model adapter's malformed reply fails the turn with the field named.

function setup(model: (clock: SimulatedClock) => ModelProvider) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const warnings: Array<{ fields: object; message?: string }> = [];
  const logger: Logger = {
    debug() {},
    info() {},
    warn(fields, message) {
      warnings.push({ fields, message });
    },
    error() {},
  };
  const gateway = createGateway({ model: model(clock), channels: { web: channel }, clock, logger });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const say = (id: string, text: string, mode?: string) =>
    gateway.receive({ session: "a", channel: "web", id, text, ...(mode ? { mode } : {}) });
  const ended = () => events.filter((event) => event.type === "turn.ended");
  return { clock, channel, gateway, events, warnings, idle, say, ended };
}

describe("how a turn ends", () => {
  it("a model error fails the turn with its reason in turn.ended, the log and explain()", async () => {
    let calls = 0;
    const { gateway, channel, warnings, idle, say, ended } = setup(() => ({
      async complete() {
        if (++calls === 1) throw new Error("rate limited by the provider");
        return { text: "Back again.", toolCalls: [] };
      },
    }));
    await gateway.start();
    await say("m1", "summarize the report");
    await idle();

    const [failed] = ended();
    expect(failed).toMatchObject({
      status: "failed",
      error: { code: "MODEL_FAILED", message: "rate limited by the provider", retryable: true },
    });
    expect(warnings).toContainEqual({
      fields: expect.objectContaining({ session: "a", runId: failed!.runId, error: failed!.error }),
      message: "turn.failed",
    });
    expect(gateway.explain("a", "m1")!.timeline.map((entry) => entry.what)).toContain(
      `turn ${failed!.runId} failed: rate limited by the provider`,
    );
    expect(channel.sent.map((sent) => sent.text)).toEqual([
      "I could not finish this reply because of an internal error. Please try again.",
    ]);

    // The session goes on.
    await say("m2", "try again please");
    await idle();
    expect(ended().at(-1)).toMatchObject({ status: "done" });
    expect(ended().at(-1)).not.toHaveProperty("error");
    expect(channel.sent.at(-1)?.text).toBe("Back again.");
    await gateway.stop();
  });

  it.each([
    [{ toolCalls: "lookup" }, 'model reply: toolCalls must be an array, received "lookup"'],
    [null, "model reply: the reply must be an object, received null"],
    [
      { text: "x", toolCalls: [{ args: {} }] },
      "model reply: toolCalls[0].name must be a tool name, received undefined",
    ],
  ])("a malformed reply (%j) fails the turn with the field named", async (reply, message) => {
    const { gateway, idle, say, ended } = setup(() => ({
      async complete() {
        return reply as never;
      },
    }));
    await gateway.start();
    await say("m1", "hello");
    await idle();
    expect(ended()).toEqual([
      expect.objectContaining({
        status: "failed",
        error: { code: "MODEL_REPLY_INVALID", message, retryable: false },
      }),
    ]);
    await gateway.stop();
  });

  it("a reply without toolCalls is a final, and tool calls without ids get ids of their run", async () => {
    let calls = 0;
    const { gateway, channel, events, idle, say } = setup(() => ({
      async complete() {
        return ++calls === 1
          ? ({ toolCalls: [{ name: "message", args: { action: "send", text: "On it." } }] } as never)
          : ({ text: "Done." } as never);
      },
    }));
    await gateway.start();
    await say("m1", "hello");
    await idle();
    const started = events.find((event) => event.type === "tool.started")!;
    expect(started.callId).toBe(`${started.runId}-c1-1`);
    expect(channel.sent.map((sent) => sent.text)).toEqual(["On it.", "Done."]);
    await gateway.stop();
  });

  it.each([
    ["an interrupting message", "urgent: stop and do this", "interrupt", "interrupted by message m2"],
    ["/stop", "/stop", undefined, "stopped by /stop"],
    ["/new", "/new", undefined, "cut off by /new"],
  ])("a turn aborted by %s says so in turn.ended", async (_, text, mode, reason) => {
    const { gateway, clock, idle, say, ended } = setup(
      (clock) => new ScriptedModel([{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }], clock),
    );
    await gateway.start();
    await say("m1", "write the long report");
    await clock.advance(100, () => gateway.isBusy);
    await say("m2", text, mode);
    await idle();
    const [first] = ended();
    expect(first).toMatchObject({ status: "aborted", reason });
    expect(first).not.toHaveProperty("error");
    expect(gateway.explain("a", "m1")!.timeline.map((entry) => entry.what)).toContain(
      `turn ${first!.runId} aborted: ${reason}`,
    );
    await gateway.stop();
  });
});

describe("what the gateway reports, whatever its observers do", () => {
  it("a logger that throws breaks nothing: the failed turn still sends its notice and its events", async () => {
    const clock = new SimulatedClock();
    const channel = new LoopbackChannel({ now: () => clock.now() });
    const broken = () => {
      throw new Error("log pipe closed");
    };
    const gateway = createGateway({
      model: {
        async complete() {
          throw new Error("provider down");
        },
      },
      channels: { web: channel },
      clock,
      logger: { debug: broken, info: broken, warn: broken, error: broken },
    });
    const events: TillerEvent[] = [];
    gateway.subscribe((event) => events.push(event));
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hello" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    expect(events.find((event) => event.type === "turn.ended")).toMatchObject({ status: "failed" });
    expect(channel.sent.map((sent) => sent.kind)).toEqual(["notice"]);
    await gateway.stop();
  });

  it("events() keeps what happens between the call and the first read", async () => {
    const clock = new SimulatedClock();
    const gateway = createGateway({
      model: new ScriptedModel([{ reply: { text: "hi" } }], clock),
      channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
      clock,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    await gateway.start();
    const stream = gateway.events();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hello" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    const seen: string[] = [];
    for await (const event of stream) {
      seen.push(event.type);
      if (event.type === "final.delivered") break;
    }
    expect(seen).toContain("message.acked");
    expect(seen.at(-1)).toBe("final.delivered");
    await gateway.stop();
  });
});
