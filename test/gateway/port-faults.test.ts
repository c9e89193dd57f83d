import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import type { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import {
  COULD_NOT_DELIVER_NOTICE,
  FAILED_NOTICE,
  TIMED_OUT_NOTICE,
  UNCERTAIN_DELIVERY_NOTICE,
} from "../../src/policy/delivery.js";
import type { Channel, DeliveryReceipt, OutboundMessage } from "../../src/ports/channel.js";
import { sleep } from "../../src/ports/clock.js";
import {
  latestUserText,
  type ModelProvider,
  type ModelReply,
  type ModelRequest,
} from "../../src/ports/model.js";
import type { ExpectedHead, RecordBody } from "../../src/ports/store.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import { gatewayOn } from "../support/gateway-on.js";

// Faults injected at each port, each on its own schedule (it hits the first message, then clears):
// what the user is told while it lasts, and that nothing acknowledged is lost once it clears. The
// promises behind each row are written down in docs/guarantees.md.

interface Faults {
  /** Store appends that fail (EIO / ENOSPC), counted from the first. */
  failAppends?: { count: number; code: "EIO" | "ENOSPC" };
  /** Every append waits this long (ms of real time) first, an fsync stall. */
  stallMs?: number;
  failStateSaves?: number;
  channel?: "fail" | "timeout" | "omit";
  model?: "fail" | "hang" | "malformed";
  tool?: "throw" | "hang";
}

class FaultyStore extends MemoryStore {
  constructor(
    private readonly faults: Faults,
    clock: () => SimulatedClock,
  ) {
    super({ now: () => clock().now() });
  }
  appendFailures = 0;
  stateFailures = 0;
  active = true;
  override async append(session: string, records: RecordBody[], expect: ExpectedHead) {
    const fail = this.faults.failAppends;
    if (this.active && fail && this.appendFailures < fail.count) {
      this.appendFailures++;
      throw Object.assign(new Error(`${fail.code}: injected`), { code: fail.code });
    }
    // Real time, as a disk stalls: the simulated clock waits for I/O in flight.
    if (this.active && this.faults.stallMs)
      await new Promise((resolve) => setTimeout(resolve, this.faults.stallMs));
    return super.append(session, records, expect);
  }
  override async saveState(session: string, state: unknown) {
    if (this.active && this.stateFailures < (this.faults.failStateSaves ?? 0)) {
      this.stateFailures++;
      throw Object.assign(new Error("ENOSPC: injected"), { code: "ENOSPC" });
    }
    return super.saveState(session, state);
  }
}

/** The first send fails, hangs or comes back without a messageId; later ones go through. */
class FaultyChannel implements Channel {
  readonly inner = new LoopbackChannel();
  private fired = false;
  constructor(private readonly fault: Faults["channel"]) {}
  async send(message: OutboundMessage): Promise<DeliveryReceipt> {
    if (!this.fired && this.fault) {
      this.fired = true;
      if (this.fault === "fail") throw new Error("ECONNRESET: injected");
      if (this.fault === "timeout") return new Promise<never>(() => {});
      return { status: "accepted" };
    }
    return this.inner.send(message);
  }
}

/** The first model call fails, hangs or returns something that is not a reply. */
function faultyModel(fault: Faults["model"], clock: () => SimulatedClock): ModelProvider {
  let calls = 0;
  return {
    async complete(request: ModelRequest): Promise<ModelReply> {
      calls++;
      const latest = latestUserText(request.context);
      if (calls === 1 && fault === "fail") throw { code: 503, message: "model overloaded" };
      if (calls === 1 && fault === "hang") return new Promise<never>(() => {});
      if (calls === 1 && fault === "malformed")
        return { text: 42, toolCalls: "none" } as unknown as ModelReply;
      await sleep(clock(), 100, request.signal);
      if (latest.includes("tool") && request.call === 1)
        return { text: "", toolCalls: [{ callId: `${request.runId}-t`, name: "work", args: {} }] };
      return { text: `Re: ${latest}`, toolCalls: [] };
    },
  };
}

function faultyTool(fault: Faults["tool"]): ToolDefinition {
  let calls = 0;
  return {
    name: "work",
    cancellable: true,
    async execute(_args, context) {
      calls++;
      if (calls === 1 && fault === "throw") throw new Error("EACCES: injected");
      if (calls === 1 && fault === "hang") return new Promise<never>(() => {});
      void context;
      return "worked";
    },
  };
}

function gatewayWith(faults: Faults) {
  let clockRef: SimulatedClock | undefined;
  const clock = () => clockRef!;
  const store = new FaultyStore(faults, clock);
  const channel = new FaultyChannel(faults.channel);
  const g = gatewayOn(store, {
    config: { delivery: { sendTimeoutMs: 5_000 }, limits: { modelTimeoutMs: 10_000, toolTimeoutMs: 10_000 } },
    channel,
    tools: [faultyTool(faults.tool)],
    model: faultyModel(faults.model, clock),
  });
  clockRef = g.clock;
  return { g, store, channel };
}

/** Sends m1 during the fault, clears it, sends m2; returns what the user saw (kind, text). */
async function during(faults: Faults, text = "first question") {
  const { g, store, channel } = gatewayWith(faults);
  await g.gateway.start();
  const acking = g.send("m1", text);
  await g.settle();
  const ack1 = await acking;
  const told = channel.inner.sent.map((sent) => [sent.kind, sent.text]);
  store.active = false;
  const ack2 = g.send("m2", "second question");
  await g.settle();
  return { g, ack1, ack2: await ack2, told, all: channel.inner.sent.map((sent) => [sent.kind, sent.text]) };
}

describe("faults at the ports", () => {
  it.each([
    ["store appends fail with EIO", { failAppends: { count: 1, code: "EIO" } }, [["notice", FAILED_NOTICE]]],
    [
      "store appends fail with ENOSPC",
      { failAppends: { count: 1, code: "ENOSPC" } },
      [["notice", FAILED_NOTICE]],
    ],
    ["store appends stall (fsync)", { stallMs: 40 }, [["reply", "Re: first question"]]],
    ["state saves fail twice (ENOSPC), then work", { failStateSaves: 2 }, [["reply", "Re: first question"]]],
    ["the channel fails a send", { channel: "fail" }, [["recovery", "Re: first question"]]],
    // It may yet have posted (aborted, never settled): not resent blindly, the user is told to check.
    ["the channel does not answer a send", { channel: "timeout" }, [["notice", UNCERTAIN_DELIVERY_NOTICE]]],
    ["the channel omits the messageId", { channel: "omit" }, [["recovery", "Re: first question"]]],
    ["the model call fails", { model: "fail" }, [["notice", FAILED_NOTICE]]],
    ["the model call hangs", { model: "hang" }, [["notice", FAILED_NOTICE]]],
    ["the model reply is malformed", { model: "malformed" }, [["notice", FAILED_NOTICE]]],
  ] as Array<[string, Faults, string[][]]>)(
    "%s: the user is told, and nothing acknowledged is lost",
    async (_name, faults, told) => {
      const result = await during(faults);
      expect(result.ack1.disposition).toBe("started");
      expect(result.ack1.durable).toBeUndefined();
      expect(result.told).toEqual(told);
      // Once the fault clears the next message is answered, and nothing is said twice.
      expect(result.ack2.disposition).toBe("started");
      expect(result.all).toEqual([...told, ["reply", "Re: second question"]]);
    },
  );

  it.each([
    ["a tool throws", "throw"],
    ["a tool hangs past limits.toolTimeoutMs", "hang"],
  ] as Array<[string, Faults["tool"]]>)(
    "%s: the model is told the outcome and the turn still answers",
    async (_name, tool) => {
      const result = await during({ tool }, "use the tool please");
      expect(result.told).toEqual([["reply", "Re: use the tool please"]]);
      expect(result.all).toEqual([
        ["reply", "Re: use the tool please"],
        ["reply", "Re: second question"],
      ]);
    },
  );

  it("a channel that fails the reply and its resend: one could-not-deliver notice, then normal service", async () => {
    const { g, channel } = gatewayWith({});
    const failing = new LoopbackChannel({ failSends: 2 });
    (channel as unknown as { inner: LoopbackChannel }).inner = failing;
    await g.gateway.start();
    await g.send("m1", "first question");
    await g.settle();
    await g.send("m2", "second question");
    await g.settle();
    expect(failing.sent.filter((sent) => sent.ok).map((sent) => [sent.kind, sent.text])).toEqual([
      ["notice", COULD_NOT_DELIVER_NOTICE],
      ["reply", "Re: second question"],
    ]);
  });

  it("a tool that cannot be cancelled and hangs past the lane timeout: the user is told it ran out of time", async () => {
    const hang: ToolDefinition = { name: "work", cancellable: false, execute: () => new Promise(() => {}) };
    let clockRef: SimulatedClock | undefined;
    const g = gatewayOn(new MemoryStore(), {
      config: { laneTimeoutMs: 2_000 },
      tools: [hang],
      model: faultyModel(undefined, () => clockRef!),
    });
    clockRef = g.clock;
    await g.gateway.start();
    await g.send("m1", "use the tool please");
    await g.clock.advance(3_000);
    await g.send("m2", "second question");
    await g.settle();
    expect(g.channel.sent.map((sent) => [sent.kind, sent.text])).toEqual([
      ["notice", TIMED_OUT_NOTICE],
      ["reply", "Re: second question"],
    ]);
  });
});
