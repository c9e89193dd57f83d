import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { MessageRejectedError } from "../../src/errors.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";

// Inbound messages a channel adapter may hand over by mistake, and commands a user may mistype: each
// gets a clear answer, and nothing accepted earlier is affected.

function setup(config: object = {}) {
  const clock = new SimulatedClock();
  const web = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    config,
    model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
    channels: { web },
    clock,
    logger: silentLogger,
  });
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  return { clock, web, gateway, idle };
}

async function rejection(promise: Promise<unknown>): Promise<MessageRejectedError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(MessageRejectedError);
  return error as MessageRejectedError;
}

describe("inbound edge cases", () => {
  it("refuses a message on a channel the gateway has no adapter for: its reply could not go out", async () => {
    const { gateway } = setup();
    await gateway.start();
    const error = await rejection(gateway.receive({ session: "a", channel: "sms", id: "m1", text: "hi" }));
    expect(error.message).toContain("channel");
    expect(error.message).toContain("web");
    expect(gateway.inspectSession("a")).toBeUndefined();
    await gateway.stop();
  });

  it("refuses session keys and message ids a transcript could not store as they are", async () => {
    const { gateway } = setup();
    await gateway.start();
    const key = await rejection(
      gateway.receive({ session: "x\uD800", channel: "web", id: "m1", text: "hi" }),
    );
    expect(key.code).toBe("SESSION_KEY_INVALID");
    for (const id of ["m\u0000", "m\n2", "m\uDC00"]) {
      const error = await rejection(gateway.receive({ session: "a", channel: "web", id, text: "hi" }));
      expect(error.code).toBe("MESSAGE_REJECTED");
    }
    await gateway.stop();
  });

  it("lets a message turned away by a full queue be sent again: the retry is not a duplicate", async () => {
    const { gateway, web, clock, idle } = setup({ queue: { mode: "followup", cap: 1, drop: "new" } });
    await gateway.start();
    const say = (id: string, text: string) => gateway.receive({ session: "a", channel: "web", id, text });
    expect((await say("m1", "first")).disposition).toBe("started");
    expect((await say("m2", "second")).disposition).toBe("queued");
    expect((await say("m3", "third")).disposition).toBe("rejected");
    await idle();
    await clock.advance(1000, () => gateway.isBusy);
    expect((await say("m3", "third")).disposition).toBe("started");
    await idle();
    expect(web.sent.map((sent) => sent.text)).toEqual(["Re: first", "Re: second", "Re: third"]);
    await gateway.stop();
  });

  it("refuses a collect window a user could park their messages in forever", async () => {
    const { gateway } = setup();
    await gateway.start();
    for (const value of ["1e400s", "99999999m", "11m"]) {
      const ack = await gateway.receive({
        session: "a",
        channel: "web",
        id: `q-${value}`,
        text: `/queue collect debounce:${value}`,
      });
      expect(ack.text).toContain("at most 10m");
    }
    const ok = await gateway.receive({
      session: "a",
      channel: "web",
      id: "q",
      text: "/queue collect debounce:10m",
    });
    expect(ok.text).not.toContain("at most 10m");
    await gateway.stop();
  });

  it("with visible acks, control commands are answered in the channel too", async () => {
    const { gateway, web, idle } = setup({ delivery: { visibleAcks: true } });
    await gateway.start();
    const acks = [];
    for (const [id, text] of [
      ["q", "/queue followup"],
      ["s", "/stop"],
      ["n", "/new"],
    ] as const)
      acks.push(await gateway.receive({ session: "a", channel: "web", id, text }));
    await idle();
    expect(web.sent.filter((sent) => sent.kind === "ack").map((sent) => sent.text)).toEqual(
      acks.map((ack) => ack.text),
    );
    await gateway.stop();
  });

  it("/stop while the reply is being sent says the reply is on its way, not that nothing was running", async () => {
    const clock = new SimulatedClock();
    const web = new LoopbackChannel({ now: () => clock.now() });
    const slow = {
      send: (message: Parameters<LoopbackChannel["send"]>[0]) =>
        new Promise<Awaited<ReturnType<LoopbackChannel["send"]>>>((resolve) =>
          clock.setTimeout(() => resolve(web.send(message)), 500),
        ),
    };
    const gateway = createGateway({
      model: new ScriptedModel([{ reply: { delayMs: 100, text: "Done." } }], clock),
      channels: { web: slow },
      clock,
      logger: silentLogger,
    });
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "do it" });
    await clock.advance(200, () => gateway.isBusy);
    const ack = await gateway.receive({ session: "a", channel: "web", id: "s", text: "/stop" });
    expect(ack.text).toBe("The reply already written is being delivered.");
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    expect(web.sent.map((sent) => sent.text)).toEqual(["Done."]);
    await gateway.stop();
  });

  it("answers each turn on the channel of its message, when a user writes on two channels", async () => {
    const clock = new SimulatedClock();
    const telegram = new LoopbackChannel({ now: () => clock.now() });
    const web = new LoopbackChannel({ now: () => clock.now() });
    const gateway = createGateway({
      config: { queue: { mode: "followup" } },
      model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
      channels: { telegram, web },
      clock,
      logger: silentLogger,
    });
    await gateway.start();
    await gateway.receive({ session: "u", channel: "telegram", id: "m1", text: "from my phone" });
    await clock.advance(50, () => gateway.isBusy);
    await gateway.receive({ session: "u", channel: "web", id: "m2", text: "from my laptop" });
    await clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    expect(telegram.sent.map((sent) => sent.text)).toEqual(["Re: from my phone"]);
    expect(web.sent.map((sent) => sent.text)).toEqual(["Re: from my laptop"]);
    await gateway.stop();
  });
});
