import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";

// The gateway's turns under `laneTimeoutMs` with `laneAbortGraceMs`, on a simulated clock: at the
// deadline the session is told at once and stops the run; the turn's lane slot is held until the turn
// has left, so the session's next turn never overlaps the one that is still stopping.

function setup(config: object) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    config,
    model: new ScriptedModel(
      [
        { when: { turn: 1 }, reply: { delayMs: 60_000, text: "late" } },
        { reply: { delayMs: 10, text: "Re: {{latestUser}}" } },
      ],
      clock,
    ),
    channels: { web: channel },
    clock,
    logger: silentLogger,
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  const say = (id: string, text: string) => gateway.receive({ session: "a", channel: "web", id, text });
  return { gateway, events, idle, say, channel };
}

describe("lane deadlines with an abort grace in the gateway", () => {
  it("a turn past laneTimeoutMs is stopped at the deadline and keeps its slot until it has left", async () => {
    const { gateway, events, idle, say, channel } = setup({
      laneTimeoutMs: 5_000,
      laneAbortGraceMs: 30_000,
      queue: { mode: "followup" },
    });
    await gateway.start();
    await say("m1", "slow question");
    await say("m2", "next question");
    await idle();
    const at = (type: string, from = 0) => events.findIndex((e, i) => i >= from && e.type === type);
    const timeout = at("lane.timeout");
    expect(events[timeout]).toMatchObject({ at: 5_000, timeoutMs: 5_000, abortGraceMs: 30_000 });
    // Told at the deadline, not when the grace runs out: the run stops at once.
    const ended = at("turn.ended");
    expect(events[ended]).toMatchObject({ at: 5_000, status: "aborted" });
    // The slot goes once the turn left; only then does the follow-up's turn start.
    const slotFreed = events.findIndex((e) => e.type === "lane.ended" && e.status === "timedOut");
    expect(slotFreed).toBeGreaterThan(ended);
    const nextStarted = at("lane.started", slotFreed);
    expect(nextStarted).toBeGreaterThan(slotFreed);
    expect(events.filter((e) => e.type === "lane.abortGraceExceeded")).toEqual([]);
    expect(channel.sent.map((sent) => sent.kind)).toEqual(["notice", "reply"]);
    await gateway.stop();
  });
});
