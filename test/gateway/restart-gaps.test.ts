import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import type { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { clockTool, gatewayOn } from "../support/gateway-on.js";

// What a restart must keep: session overrides, acknowledged interrupts, duplicate detection across
// `/new`, the story explain() tells; and what a live session reports about itself.

const TOOL_FIRST = [
  { when: { latestUser: "write", call: 1 }, reply: { delayMs: 100, toolCalls: [{ name: "write_file" }] } },
  { reply: { delayMs: 100, text: "Re: {{latestUser}}" } },
];

describe("a restart keeps what was acknowledged", () => {
  it("keeps a /queue session override", async () => {
    const store = new MemoryStore();
    const first = gatewayOn(store, { rules: [{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }] });
    await first.gateway.start();
    expect((await first.send("c1", "/queue followup")).disposition).toBe("control");

    const second = gatewayOn(store, { rules: [{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }] });
    await second.gateway.start();
    expect((await second.send("m1", "one")).disposition).toBe("started");
    const next = await second.send("m2", "two");
    expect([next.disposition, next.mode, next.modeSource]).toEqual(["queued", "followup", "session"]);
  });

  it("keeps an acknowledged interrupt: the cut-off turn and its tool never run again", async () => {
    const store = new MemoryStore();
    const ran: string[] = [];
    const tool = (clock: () => SimulatedClock): ToolDefinition =>
      clockTool("write_file", 5000, false, clock, ran);
    const first = gatewayOn(store, { rules: TOOL_FIRST, tools: [tool(() => first.clock)] });
    await first.gateway.start();
    await first.send("m1", "write the file");
    await first.clock.advance(1000);
    expect(ran).toHaveLength(1);
    const interrupt = await first.send("m2", "stop, answer this instead", "interrupt");
    expect(interrupt.disposition).toBe("interrupted");
    await first.clock.advance(500); // the tool still runs when the process dies

    const second = gatewayOn(store, { rules: TOOL_FIRST, tools: [tool(() => second.clock)] });
    await second.gateway.start();
    await second.settle();
    expect(ran).toHaveLength(1);
    expect(second.channel.sent.map((sent) => sent.text)).toEqual(["Re: stop, answer this instead"]);
  });

  it("keeps redelivered ids duplicates after /new, and a stale redelivery never interrupts the current turn", async () => {
    const store = new MemoryStore();
    const first = gatewayOn(store);
    await first.gateway.start();
    await first.send("m1", "old question");
    await first.settle();
    await first.send("n1", "/new");
    await first.settle();

    const second = gatewayOn(store, { rules: [{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }] });
    await second.gateway.start();
    expect((await second.send("m1", "old question")).disposition).toBe("duplicate");
    await second.send("m2", "new question");
    await second.clock.advance(100);
    expect((await second.send("m1", "old question", "interrupt")).disposition).toBe("duplicate");
    await second.settle();
    expect(second.events.filter((event) => event.type === "turn.ended").map((event) => event.status)).toEqual(
      ["done"],
    );
    expect(second.channel.sent.map((sent) => sent.text)).toEqual(["Re: new question"]);
  });

  it("explains a message from the transcript after a restart, and a recovered reply as delivered", async () => {
    const store = new MemoryStore();
    const first = gatewayOn(store);
    await first.gateway.start();
    await first.send("m1", "hello");
    await first.settle();

    const second = gatewayOn(store);
    await second.gateway.start();
    expect((await second.send("m1", "hello")).disposition).toBe("duplicate");
    const story = second.gateway.explain("web:1", "m1");
    expect(story).toMatchObject({ disposition: "accepted", answeredBy: { delivered: true } });
    expect(story?.timeline.map((step) => step.what)).toContain("redelivered: acked duplicate");

    // A reply that failed and was resent once: delivered.
    const flaky = gatewayOn(new MemoryStore(), { channel: new LoopbackChannel({ failSends: 1 }) });
    await flaky.gateway.start();
    await flaky.send("p1", "short question");
    await flaky.settle();
    expect(flaky.gateway.explain("web:1", "p1")).toMatchObject({ answeredBy: { delivered: true } });
  });
});

describe("what a session reports", () => {
  it("/new does not report messages the model already saw as dropped", async () => {
    const { gateway, send, settle, clock, events } = gatewayOn(new MemoryStore(), {
      rules: [{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }],
    });
    await gateway.start();
    await send("m1", "a long question");
    await clock.advance(100);
    await send("n1", "/new");
    await settle();
    expect(events.filter((event) => event.type === "message.dropped")).toEqual([]);
    expect(gateway.explain("web:1", "m1")?.dropped).toBeUndefined();
  });

  it("inspectSession counts the whole transcript after a restart and shows the workload lane's capacity", async () => {
    const store = new MemoryStore();
    const first = gatewayOn(store);
    await first.gateway.start();
    await first.send("m1", "one");
    await first.settle();
    const stored = (await store.read("web:1")).length;

    const second = gatewayOn(store, {
      config: { lanes: { main: 4 } },
      rules: [{ reply: { delayMs: 1000, text: "Re: {{latestUser}}" } }],
    });
    await second.gateway.start();
    await second.send("m2", "two");
    const seen = second.gateway.inspectSession("web:1");
    expect(seen?.transcriptLength).toBe(stored);
    expect(seen?.lane?.capacity).toBe(4);
  });

  it("a tool that cannot be cancelled and hangs does not hold its session past the lane timeout", async () => {
    const hang: ToolDefinition = {
      name: "write_file",
      cancellable: false,
      execute: () => new Promise(() => {}),
    };
    const g = gatewayOn(new MemoryStore(), {
      config: { laneTimeoutMs: 1000 },
      rules: TOOL_FIRST,
      tools: [hang],
    });
    await g.gateway.start();
    await g.send("m1", "write the file");
    await g.clock.advance(1500);
    expect(g.gateway.inspectSession("web:1")?.state).toBe("idle");
    expect((await g.send("m2", "are you there?")).disposition).toBe("started");
    await g.clock.advance(200);
    expect(g.channel.sent.map((sent) => [sent.kind, sent.text])).toEqual([
      ["notice", expect.stringContaining("in time")],
      ["reply", "Re: are you there?"],
    ]);
  });
});
