import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import { scenarioSchema } from "../../src/scenario/schema.js";
import { InvariantMonitor } from "../../src/testing/invariant-monitor.js";

// Random mixes of user messages and background arrivals (cron, heartbeat) in two sessions, in steer or
// followup mode, with model calls of random length. Whatever the mix: no delivered final of a turn
// nobody typed ignores a user message of its session that arrived before its last model call (and was
// not answered by an earlier turn); every triggered turn either ran once or its ack (or a
// `message.dropped`) says why not; and the runtime's invariants hold on every event.

interface Mix {
  arrivals: Array<{ at: number; session: 0 | 1; kind: "user" | "cron" | "heartbeat" }>;
  mode: "steer" | "followup";
  modelDelayMs: number;
  maxPasses: number;
}

const mixArb: fc.Arbitrary<Mix> = fc.record({
  arrivals: fc.array(
    fc.record({
      at: fc.integer({ min: 0, max: 60 }).map((n) => n * 100),
      session: fc.constantFrom(0 as const, 1 as const),
      kind: fc.constantFrom("user" as const, "cron" as const, "heartbeat" as const),
    }),
    { minLength: 1, maxLength: 8 },
  ),
  mode: fc.constantFrom("steer" as const, "followup" as const),
  modelDelayMs: fc.integer({ min: 100, max: 1500 }),
  maxPasses: fc.integer({ min: 0, max: 2 }),
});

async function play(mix: Mix): Promise<ScenarioResult> {
  const scenario = scenarioSchema.parse({
    config: { queue: { mode: mix.mode }, staleReplyRecheck: { maxPasses: mix.maxPasses } },
    model: [{ reply: { delayMs: mix.modelDelayMs, text: "Re: {{latestUser}}" } }],
    inbound: mix.arrivals.map((arrival, index) => ({
      at: arrival.at,
      session: `t:${arrival.session}`,
      channel: "t",
      id: `${arrival.kind}-${index}`,
      text: `${arrival.kind} ${index}`,
      ...(arrival.kind === "user" ? {} : { trigger: arrival.kind }),
    })),
  });
  return (await runScenario(scenario)).result;
}

function check(result: ScenarioResult): void {
  const events = result.events;
  const started = events.filter((e) => e.type === "turn.started");
  const triggerOf = new Map(started.map((e) => [String(e.runId), String(e.trigger)]));
  const endedAt = new Map(events.filter((e) => e.type === "turn.ended").map((e) => [String(e.runId), e.at]));
  const calls = events.filter((e) => e.type === "model.called");
  const userArrivals = result.acks.filter((ack) => ack.trigger === undefined);

  // 1. A background turn's delivered final saw every earlier user message not answered before it.
  for (const delivery of result.deliveries.filter((d) => d.kind === "reply")) {
    const trigger = triggerOf.get(delivery.runId);
    if (trigger === undefined || trigger === "user") continue;
    const last = calls.filter((c) => c.runId === delivery.runId).at(-1);
    expect(last, `a final of ${delivery.runId} without a model call`).toBeDefined();
    const seen = new Set((last!.messageIds as string[]) ?? []);
    const answeredBefore = new Set(
      calls
        .filter((c) => c.runId !== delivery.runId && (endedAt.get(String(c.runId)) ?? Infinity) <= last!.at)
        .flatMap((c) => (c.messageIds as string[]) ?? []),
    );
    for (const ack of userArrivals) {
      if (ack.session !== delivery.session || ack.at >= last!.at) continue;
      if (ack.disposition === "rejected" || ack.disposition === "duplicate") continue;
      expect(
        seen.has(ack.messageId) || answeredBefore.has(ack.messageId),
        `the ${trigger} final of ${delivery.runId} ignores ${ack.messageId}`,
      ).toBe(true);
    }
  }

  // 2. Every triggered turn ran once, or says why not.
  for (const ack of result.acks.filter((a) => a.trigger !== undefined)) {
    const turns = started.filter((e) => (e.messageIds as string[]).includes(ack.messageId));
    const dropped = events.find((e) => e.type === "message.dropped" && e.messageId === ack.messageId);
    if (ack.disposition === "started" || ack.disposition === "queued") {
      expect(turns.length + (dropped ? 1 : 0), `${ack.messageId} ran ${turns.length} times`).toBe(1);
    } else {
      expect(turns, `${ack.messageId} was ${ack.disposition} yet ran`).toHaveLength(0);
      expect(ack.reason ?? ack.text).toBeTruthy();
    }
  }

  // 3. The runtime's invariants, on every event.
  const monitor = new InvariantMonitor(2);
  for (const event of events) monitor.observe(event);
  monitor.checkSettled(Number.POSITIVE_INFINITY);
  expect(monitor.violations).toEqual([]);
}

describe("random mixes of user messages and background arrivals", () => {
  it("never deliver a background final that ignores a user message, and account for every trigger", async () => {
    await fc.assert(
      fc.asyncProperty(mixArb, async (mix) => check(await play(mix))),
      { numRuns: 60 },
    );
  });
});
