import { describe, expect, it } from "vitest";
import { DISCARDED_TEXT, REVISING_TEXT } from "../../src/actors/stream-previews.js";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import type { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { TYPING_EVERY_MS } from "../../src/gateway/typing-indicator.js";
import { sleep } from "../../src/ports/clock.js";
import type { ModelProvider } from "../../src/ports/model.js";
import { chatGateway } from "../support/chat-gateway.js";

// What a chat channel shows while a turn runs: "typing…" at most every 4 s, and with
// `delivery.streaming.mode: "edit"` one preview message edited as the model streams, which the final
// replaces; a re-check that discards the draft edits the preview at once.

/** A model that streams its reply in chunks, one per second on the clock; a re-check answers anew. */
function streamingModel(clock: SimulatedClock, first: string[], recheck: string[]): ModelProvider {
  return {
    async complete(request) {
      const chunks = request.recheck ? recheck : first;
      for (const chunk of chunks) {
        await sleep(clock, 1000, request.signal);
        request.onDelta?.(chunk);
      }
      return { text: chunks.join(""), toolCalls: [] };
    },
  };
}

const editing = (clock: SimulatedClock) =>
  new LoopbackChannel({ now: () => clock.now(), capabilities: { edit: true } });

describe("streaming previews (delivery.streaming.mode: edit)", () => {
  it("sends the first streamed text once, edits it as the model streams, and the final replaces it", async () => {
    const world = chatGateway(editing, {
      config: { delivery: { streaming: { mode: "edit", minIntervalMs: 1000 } } },
      model: (clock) => streamingModel(clock, ["One, ", "two, ", "three, ", "four."], []),
    });
    await world.gateway.start();
    await world.send("m1", "count");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    const replies = channel.sent.filter((sent) => sent.kind === "reply");
    expect(replies).toHaveLength(1);
    expect(replies[0]?.text).toBe("One, two, three, four.");
    expect(channel.edits.map((edit) => edit.text)).toEqual([
      "One, two, ",
      "One, two, three, ",
      "One, two, three, four.",
    ]);
    const stored = (await world.store.readWindow("chat:1")).find((record) => record.role === "assistant");
    expect(stored).toMatchObject({ delivered: true, deliveryMessageId: replies[0]?.messageId });
  });

  it("edits no more often than minIntervalMs", async () => {
    const world = chatGateway(editing, {
      config: { delivery: { streaming: { mode: "edit", minIntervalMs: 2500 } } },
      model: (clock) => streamingModel(clock, ["a ", "b ", "c ", "d ", "e ", "f."], []),
    });
    await world.gateway.start();
    await world.send("m1", "letters");
    await world.settle();
    const edits = (world.channel as LoopbackChannel).edits;
    // Streaming edits (every edit but the final's) are at least 2.5 s apart.
    const streamed = edits.slice(0, -1).map((edit) => edit.at);
    for (let index = 1; index < streamed.length; index++)
      expect(streamed[index]! - streamed[index - 1]!).toBeGreaterThanOrEqual(2500);
    expect(edits.at(-1)?.text).toBe("a b c d e f.");
  });

  it("a re-check that discards the draft edits the preview at once, then the new answer replaces it", async () => {
    const world = chatGateway(editing, {
      config: { delivery: { streaming: { mode: "edit", minIntervalMs: 1000 } } },
      model: (clock) => streamingModel(clock, ["About A: ", "the answer."], ["About B: ", "this one."]),
    });
    await world.gateway.start();
    await world.send("m1", "tell me about A");
    await world.clock.advance(1500);
    await world.send("m2", "no, I meant B");
    await world.settle();
    expect(world.ofType("recheck.fired")).toHaveLength(1);
    const channel = world.channel as LoopbackChannel;
    const texts = channel.edits.map((edit) => edit.text);
    expect(texts).toContain(REVISING_TEXT);
    // Once the re-check fired, the draft about A is never shown again.
    expect(texts.slice(texts.indexOf(REVISING_TEXT) + 1).some((text) => text.includes("About A"))).toBe(
      false,
    );
    const replies = channel.sent.filter((sent) => sent.kind === "reply");
    expect(replies.map((sent) => sent.text)).toEqual(["About B: this one."]);
  });

  it("a turn stopped while it streams leaves the preview marked as discarded", async () => {
    const world = chatGateway(editing, {
      config: { delivery: { streaming: { mode: "edit" } } },
      model: (clock) => streamingModel(clock, ["Half ", "a ", "reply."], []),
    });
    await world.gateway.start();
    await world.send("m1", "go");
    await world.clock.advance(1500);
    await world.send("m2", "/stop");
    await world.settle();
    const replies = (world.channel as LoopbackChannel).sent.filter((sent) => sent.kind === "reply");
    expect(replies.map((sent) => sent.text)).toEqual([DISCARDED_TEXT]);
  });

  it("is off by default: only the final is sent", async () => {
    const world = chatGateway(editing, {
      model: (clock) => streamingModel(clock, ["One, ", "two."], []),
    });
    await world.gateway.start();
    await world.send("m1", "count");
    await world.settle();
    const channel = world.channel as LoopbackChannel;
    expect(channel.edits).toEqual([]);
    expect(channel.sent.filter((sent) => sent.kind === "reply").map((sent) => sent.text)).toEqual([
      "One, two.",
    ]);
  });
});

describe("typing while a turn runs", () => {
  it("is shown when the turn starts and every 4 s of the clock until it ends, then never again", async () => {
    const world = chatGateway(
      (clock) => new LoopbackChannel({ now: () => clock.now(), capabilities: { typing: true } }),
      { rules: [{ reply: { delayMs: 10_000, text: "Done." } }] },
    );
    await world.gateway.start();
    await world.send("m1", "take your time");
    await world.settle();
    await world.clock.advance(20_000);
    const channel = world.channel as LoopbackChannel;
    const start = world.ofType("turn.started")[0]!.at;
    const end = world.ofType("turn.ended")[0]!.at;
    expect(TYPING_EVERY_MS).toBe(4000);
    expect(channel.typings.map((typing) => typing.at - start)).toEqual([0, 4000, 8000]);
    expect(channel.typings.every((typing) => typing.at < end)).toBe(true);
  });
});
