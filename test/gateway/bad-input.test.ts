import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { MessageRejectedError } from "../../src/errors.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

function gateway(config: object = {}) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const instance = createGateway({
    config,
    model: new ScriptedModel([{ reply: { delayMs: 100, text: "Re: {{latestUser}}" } }], clock),
    channels: { web: channel },
    clock,
    logger: silentLogger,
  });
  return { instance, clock, channel };
}

describe("bad input", () => {
  it("rejects an oversized message with a readable reason and keeps what was accepted", async () => {
    const { instance, clock, channel } = gateway({ limits: { maxMessageChars: 50 } });
    await instance.start();
    const first = await instance.receive({
      session: "web:1",
      channel: "web",
      id: "a",
      text: "short question",
    });
    const big = await instance.receive({ session: "web:1", channel: "web", id: "b", text: "x".repeat(51) });
    expect(first.disposition).toBe("started");
    expect(big.disposition).toBe("rejected");
    expect(big.text).toMatch(/51 characters; the limit is 50/);
    await clock.runUntilIdle({ isBusy: () => instance.isBusy });
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: short question"]);
  });

  it("throws a typed error for hostile or malformed session keys, naming the field", async () => {
    const { instance } = gateway();
    const attempt = (session: unknown) =>
      instance.receive({ session: session as string, channel: "web", id: "m", text: "hi" });
    for (const session of ["", "a\u0000b", "line\nbreak", "k".repeat(513), 42]) {
      await expect(attempt(session)).rejects.toBeInstanceOf(MessageRejectedError);
      await expect(attempt(session)).rejects.toMatchObject({ code: "SESSION_KEY_INVALID", field: "session" });
    }
  });

  it("refuses an unknown inline queue mode in the ack instead of guessing", async () => {
    const { instance } = gateway();
    const ack = await instance.receive({
      session: "web:2",
      channel: "web",
      id: "m",
      text: "hi",
      mode: "sometimes",
    });
    expect(ack).toMatchObject({ disposition: "rejected", reason: 'unknown queue mode "sometimes"' });
  });

  it("stops a turn whose model asks for tools on every call, and tells the user once", async () => {
    const scenario = parseScenario(
      [
        "config: { limits: { maxModelCallsPerTurn: 5 } }",
        "model:",
        "  - reply: { delayMs: 10, toolCalls: [{ name: probe }] }",
        "tools:",
        "  probe: { durationMs: 5 }",
        "inbound:",
        "  - { at: 0, session: s, channel: c, id: x, text: hi }",
      ].join("\n"),
      "loop.yaml",
    );
    const { result } = await runScenario(scenario);
    expect(result.modelCalls).toHaveLength(5);
    expect(result.deliveries.map((delivery) => delivery.kind)).toEqual(["notice"]);
    expect(result.events.find((event) => event.type === "turn.ended")).toMatchObject({ status: "failed" });
  });
});

describe("adapters handed to createGateway", () => {
  const clock = new SimulatedClock();
  const model = new ScriptedModel([{ reply: { text: "ok" } }], clock);
  const web = new LoopbackChannel({ now: () => clock.now() });
  const tool = { name: "lookup", cancellable: false, execute: async () => "found" };

  it.each([
    ["a model without complete()", { model: {} }, "model"],
    ["a channel without send()", { channels: { web: {} } }, "channels.web"],
    ["no channel at all", { channels: {} }, "channels"],
    ["a tool without a name", { tools: [{ ...tool, name: "" }] }, "tools[0].name"],
    ["a tool without execute()", { tools: [{ name: "x", cancellable: true }] }, "tools[0].execute"],
    ["a non-boolean cancellable", { tools: [{ ...tool, cancellable: "yes" }] }, "tools[0].cancellable"],
    ["two tools with one name", { tools: [tool, { ...tool }] }, "tools[1].name"],
    ["a tool taking a built-in's name", { tools: [{ ...tool, name: "message" }] }, "tools[0].name"],
  ])("refuses %s with a ConfigError naming %s", (_, override, field) => {
    let caught: unknown;
    try {
      createGateway({
        model,
        channels: { web },
        clock,
        logger: silentLogger,
        ...(override as object),
      } as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: "CONFIG_INVALID" });
    expect((caught as Error).message.startsWith(`${field}:`)).toBe(true);
  });
});
