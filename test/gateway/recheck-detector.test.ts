import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { ConfigError } from "../../src/errors.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { StaleDetector } from "../../src/policy/stale-detector.js";
import type { DraftFacts } from "../../src/policy/stale-reply.js";

// The pluggable detector end to end: createGateway with `staleReplyRecheck.detect`, a scripted model,
// a loopback channel and the simulated clock. The detector decides; when it throws, answers garbage or
// takes longer than `detectTimeoutMs` on the gateway's clock, the built-in signals decide instead.

const FIRST = "Should I take the bus or walk to the museum?";
const ASSISTANT = "Walking takes 25 minutes along the river; the bus takes 10.";
const NEWEST = "it's raining";
const DRAFT = "Then take the bus: line 4 stops right outside the museum.";
const REDRAFT = "Sorry, let me answer that properly: take the bus, line 4.";

function setup(recheck: Record<string, unknown> = {}) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const model = new ScriptedModel(
    [
      { when: { recheck: true }, reply: { delayMs: 100, text: REDRAFT } },
      { when: { latestUser: "museum" }, reply: { delayMs: 100, text: ASSISTANT } },
      { when: { latestUser: "raining" }, reply: { delayMs: 100, text: DRAFT } },
      {
        when: { latestUser: "ghana" },
        reply: { delayMs: 100, text: "The capital of Kenya is Nairobi, Kenya's largest city." },
      },
      { when: { latestUser: "kenya" }, reply: { delayMs: 100, text: "Nairobi." } },
    ],
    clock,
  );
  const gateway = createGateway({
    model,
    channels: { web: channel },
    clock,
    logger: silentLogger,
    config: { staleReplyRecheck: recheck },
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  async function converse(first = FIRST, newest = NEWEST) {
    await gateway.start();
    await gateway.receive({ session: "web:a", channel: "web", id: "m1", text: first });
    await idle();
    await gateway.receive({ session: "web:a", channel: "web", id: "m2", text: newest });
    await idle();
  }
  const replies = () => channel.sent.filter((sent) => sent.ok).map((sent) => sent.text);
  const of = (type: string) => events.filter((event) => event.type === type);
  return { clock, gateway, events, converse, replies, of };
}

describe("the built-in detector reads the conversation through the gateway", () => {
  it("takes a short follow-up in the context of the assistant's last delivered reply", async () => {
    const { converse, replies, of } = setup();
    await converse();
    expect(of("recheck.fired")).toEqual([]);
    expect(replies()).toEqual([ASSISTANT, DRAFT]);
  });
});

describe("staleReplyRecheck.detect", () => {
  it("decides, with the facts the built-in signals read, and its verdict re-drafts the reply", async () => {
    const seen: DraftFacts[] = [];
    const detect: StaleDetector = async (facts) => {
      seen.push(facts);
      return { stale: true, reason: "low-overlap", detail: "the judge disagrees", figures: { score: 0.91 } };
    };
    const { converse, replies, of } = setup({ detect });
    await converse();
    // The first turn's draft was judged too (and re-drafted); the second is the one asserted here.
    expect(seen.at(-1)).toMatchObject({
      draft: DRAFT,
      newest: NEWEST,
      previousUser: FIRST,
      lastAssistant: REDRAFT,
      newerArrived: false,
    });
    expect(of("recheck.fired").at(-1)).toMatchObject({
      reason: "low-overlap",
      detail: "the judge disagrees",
      detector: "custom",
      fallback: false,
      figures: { score: 0.91 },
      pass: 1,
    });
    expect(replies()).toEqual([REDRAFT, REDRAFT]);
  });

  it("may answer at once, without a promise", async () => {
    const { converse, replies, of } = setup({ detect: () => ({ stale: false }) });
    await converse("What's the capital of Kenya?", "What's the capital of Ghana?");
    // The built-in signals would have called the Kenya answer stale; the detector says it is fine.
    expect(of("recheck.fired")).toEqual([]);
    expect(replies()).toEqual(["Nairobi.", "The capital of Kenya is Nairobi, Kenya's largest city."]);
  });

  it("falls back to the built-in signals when it throws, and says so", async () => {
    const { converse, replies, of } = setup({
      detect: () => {
        throw new Error("judge unavailable");
      },
    });
    await converse("What's the capital of Kenya?", "What's the capital of Ghana?");
    expect(of("recheck.detectorFailed").at(-1)).toMatchObject({
      error: { code: "DETECTOR_FAILED", message: "staleReplyRecheck.detect: judge unavailable" },
      fallback: "built-in",
      session: "web:a",
    });
    expect(of("recheck.fired")).toEqual([
      expect.objectContaining({ reason: "low-overlap", detector: "built-in", fallback: true }),
    ]);
    expect(replies()).toEqual(["Nairobi.", REDRAFT]);
  });

  it("falls back when it returns something that is not a verdict, naming what is wrong", async () => {
    const { converse, replies, of } = setup({ detect: async () => ({ stale: "yes" }) });
    await converse();
    expect(of("recheck.detectorFailed").at(-1)).toMatchObject({
      error: {
        code: "DETECTOR_VERDICT_INVALID",
        message: 'staleReplyRecheck.detect: expected stale to be true or false, received "yes"',
      },
    });
    expect(of("recheck.fired")).toEqual([]);
    expect(replies()).toEqual([ASSISTANT, DRAFT]);
  });

  it("falls back after detectTimeoutMs on the gateway's clock, aborts the detector, and ignores its late answer", async () => {
    const signals: AbortSignal[] = [];
    const detect: StaleDetector = (_facts, { signal }) => {
      signals.push(signal);
      return new Promise(() => {});
    };
    const { converse, replies, of, events } = setup({ detectTimeoutMs: 1500, detect });
    await converse("What's the capital of Kenya?", "What's the capital of Ghana?");
    const failures = of("recheck.detectorFailed");
    expect(failures.map((event) => ("error" in event ? (event.error as { code: string }).code : ""))).toEqual(
      ["DETECTOR_TIMEOUT", "DETECTOR_TIMEOUT"],
    );
    // The second turn's draft was ready at 2000 + 100 ms of model delay; the verdict came 1500 ms later.
    const drafted = events.filter((event) => event.type === "model.called").at(-2)?.at as number;
    expect(failures[1]?.at).toBe(drafted + 100 + 1500);
    expect(signals.every((signal) => signal.aborted)).toBe(true);
    expect(of("recheck.fired")).toEqual([
      expect.objectContaining({ reason: "low-overlap", detector: "built-in", fallback: true }),
    ]);
    expect(replies()).toEqual(["Nairobi.", REDRAFT]);
  });

  it("is refused at load when it is not a function, naming the field", () => {
    expect(() => setup({ detect: "a judge" })).toThrow(ConfigError);
    expect(() => setup({ detect: "a judge" })).toThrow(
      /config\.staleReplyRecheck\.detect: expected a function \(facts, \{ signal \}\) => verdict/,
    );
    expect(() => setup({ detectTimeoutMs: 0 })).toThrow(/config\.staleReplyRecheck\.detectTimeoutMs/);
  });
});
