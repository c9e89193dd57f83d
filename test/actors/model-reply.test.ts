import { describe, expect, it } from "vitest";
import { checkModelReply } from "../../src/actors/model-reply.js";
import { TillerError } from "../../src/errors.js";

describe("checkModelReply", () => {
  it("completes what is unambiguous: no text, no tool calls, no call id, no args", () => {
    expect(checkModelReply({ text: "hi" }, "a#1", 2)).toEqual({ text: "hi", toolCalls: [] });
    expect(
      checkModelReply({ toolCalls: [{ name: "lookup" }, { name: "lookup", callId: "x" }] }, "a#1", 2),
    ).toEqual({
      text: "",
      toolCalls: [
        { callId: "a#1-c2-1", name: "lookup", args: {} },
        { callId: "x", name: "lookup", args: {} },
      ],
    });
  });

  it("renames a call id repeated in the reply or already in the context, keeping the first as is", () => {
    const reply = {
      toolCalls: [
        { name: "a", callId: "call_1" },
        { name: "b", callId: "call_1" },
        { name: "c", callId: "call_2" },
      ],
    };
    expect(checkModelReply(reply, "a#1", 1).toolCalls.map((c) => c.callId)).toEqual([
      "call_1",
      "call_1-2",
      "call_2",
    ]);
    expect(checkModelReply(reply, "a#1", 3, ["call_1", "call_1-2"]).toolCalls.map((c) => c.callId)).toEqual([
      "call_1-3",
      "call_1-4",
      "call_2",
    ]);
  });

  it.each([
    [null, "the reply must be an object, received null"],
    ["just text", 'the reply must be an object, received "just text"'],
    [{ text: 42 }, "text must be a string, received 42"],
    [{ text: "x", toolCalls: "lookup" }, 'toolCalls must be an array, received "lookup"'],
    [{ toolCalls: [null] }, "toolCalls[0] must be an object, received null"],
    [{ toolCalls: [{ args: {} }] }, "toolCalls[0].name must be a tool name, received undefined"],
    [{ toolCalls: [{ name: "" }] }, 'toolCalls[0].name must be a tool name, received ""'],
    [{ toolCalls: [{ name: "a", callId: 7 }] }, "toolCalls[0].callId must be a non-empty string, received 7"],
    [
      { toolCalls: [{ name: "a", args: [1] }] },
      "toolCalls[0].args must be an object, received an array of 1",
    ],
  ])("refuses %j with a typed error naming the field", (reply, message) => {
    let caught: unknown;
    try {
      checkModelReply(reply, "a#1", 1);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TillerError);
    expect(caught).toMatchObject({ code: "MODEL_REPLY_INVALID", message: `model reply: ${message}` });
  });
});
