import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import type { ModelProvider, ModelReply } from "../../src/ports/model.js";
import { gatewayOn } from "../support/gateway-on.js";

// The message tool names each send after the turn's messages and its place among the turn's sends, so a
// turn re-run after a crash sends under the same ids and a channel can drop what the user already has.

/** A reply that calls the message tool once (an empty text never reaches the tool: its schema refuses it). */
let calls = 0;
const sending = (text: string): ModelReply => ({
  text: "",
  toolCalls: [{ callId: `c${++calls}`, name: "message", args: { action: "send", text } }],
});
const silent: ModelReply = { text: "", toolCalls: [] };

/** A model whose n-th call of a turn answers `replies[n - 1]`, and ends the turn silently after them. */
function perCall(...replies: ModelReply[]): ModelProvider {
  return {
    async complete(request) {
      return replies[request.call - 1] ?? silent;
    },
  };
}

describe("message tool delivery ids", () => {
  it("count the turn's sends in order; a call refused before it runs claims no place", async () => {
    const model = perCall(sending("first"), sending(""), sending("second"));
    const { gateway, channel, settle, send } = gatewayOn(new MemoryStore(), { model });
    await gateway.start();
    expect((await send("m1", "hello")).disposition).toBe("started");
    await settle();
    expect(channel.sent.map((sent) => [sent.text, sent.deliveryId])).toEqual([
      ["first", "message:web:1:m1:1"],
      ["second", "message:web:1:m1:2"],
    ]);
    await gateway.stop();
  });

  it("start again at one in the next turn, named after its own message", async () => {
    const { gateway, channel, settle, send } = gatewayOn(new MemoryStore(), {
      model: perCall(sending("sent")),
    });
    await gateway.start();
    await send("m1", "hello");
    await settle();
    await send("m2", "again");
    await settle();
    expect(channel.sent.map((sent) => sent.deliveryId)).toEqual(["message:web:1:m1:1", "message:web:1:m2:1"]);
    await gateway.stop();
  });
});
