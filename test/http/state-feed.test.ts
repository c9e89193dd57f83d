import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEventOf } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { createStateFeed } from "../../src/http/state-feed.js";
import { silentLogger } from "../../src/logger.js";
import { sleep } from "../../src/ports/clock.js";

function setup() {
  const clock = new SimulatedClock();
  const states: Array<TillerEventOf<"state">> = [];
  const seen: string[] = [];
  const feed = createStateFeed({
    now: () => clock.now(),
    emit: (event) => states.push(event),
    inspect: (event) => seen.push(event.type),
  });
  const gateway = createGateway({
    model: new ScriptedModel(
      [
        { when: { call: 1 }, reply: { delayMs: 100, toolCalls: [{ name: "lookup", args: {} }] } },
        { reply: { delayMs: 100, text: "Re: {{latestUser}}" } },
      ],
      clock,
    ),
    tools: [{ name: "lookup", cancellable: false, execute: () => sleep(clock, 500).then(() => "found") }],
    channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
    clock,
    logger: silentLogger,
    inspect: feed.inspect,
  });
  return { clock, gateway, states, seen, idle: () => clock.runUntilIdle({ isBusy: () => gateway.isBusy }) };
}

describe("state feed", () => {
  it("reports each new state of the session and its run, with the session key, run id and cause", async () => {
    const { gateway, states, seen, idle } = setup();
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "find the invoice" });
    await idle();
    const run = states.filter((event) => event.machine === "run");
    expect(run.map((event) => event.value)).toEqual([
      "streaming",
      { toolBatch: { toolRunning: "working" } },
      "streaming",
      "done",
    ]);
    expect(run.at(-1)).toMatchObject({ session: "a", status: "done", cause: "xstate.done.actor.callModel" });
    expect(new Set(run.map((event) => event.runId)).size).toBe(1);
    expect(run[1]!.at).toBe(100); // the tool call came back from the model at 100 ms
    const session = states.filter((event) => event.machine === "session").map((event) => event.value);
    expect(session).toEqual([
      "idle",
      { turn: "waitingForLane" },
      { turn: "running" },
      { turn: "delivering" },
      "idle",
    ]);
    expect(states.find((event) => event.machine === "laneScheduler")).toMatchObject({ value: "open" });
    // The inspector it wraps still sees everything.
    expect(seen).toContain("@xstate.event");
    await gateway.stop();
  });
});
