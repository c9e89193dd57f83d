import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../../src/adapters/channels/loopback-channel.js";
import { NO_RESULT, toChatMessages } from "../../../src/adapters/openai/to-chat-messages.js";
import { ScriptedModel } from "../../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../../src/adapters/simulated-clock.js";
import { createGateway } from "../../../src/gateway/create-gateway.js";
import { silentLogger } from "../../../src/logger.js";
import { sleep } from "../../../src/ports/clock.js";
import type { ModelMessage, ModelRequest } from "../../../src/ports/model.js";

// What a model call sees, mapped to chat-completions messages: faithful to the conversation, and shaped
// so a strict server (OpenAI's own) never sees an assistant `tool_calls` without a `tool` message for
// each id right after it, nor a `tool` message without its call.

/** The rule strict servers enforce, as they enforce it: a 400 otherwise. */
function expectStrictPairing(messages: ChatCompletionMessageParam[]): void {
  const shown = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === "tool") {
      expect(shown.has(message.tool_call_id), `tool message ${message.tool_call_id} without its call`).toBe(
        true,
      );
    }
    if (message.role === "assistant" && message.tool_calls?.length) {
      const ids = message.tool_calls.map((call) => call.id);
      const following = messages.slice(i + 1, i + 1 + ids.length);
      expect(following.map((next) => (next.role === "tool" ? next.tool_call_id : next.role))).toEqual(ids);
      for (const id of ids) shown.add(id);
    }
  }
}

const user = (text: string, messageId = text): ModelMessage => ({ role: "user", text, messageId });
const call = (callId: string, name = "write_file", args: unknown = { path: "a.md" }): ModelMessage => ({
  role: "toolCall",
  callId,
  name,
  args,
});
const result = (callId: string, status = "done", value: unknown = "written"): ModelMessage => ({
  role: "toolResult",
  callId,
  status,
  result: value,
});

describe("toChatMessages", () => {
  it("maps system, history, text with its tool calls, results and the final", () => {
    const messages = toChatMessages(
      [
        user("earlier question"),
        { role: "assistant", text: "earlier answer" },
        user("write the checklist"),
        { role: "assistant", text: "On it." },
        call("c1", "write_file", { path: "checklist.md" }),
        result("c1", "done", { bytes: 120 }),
        { role: "assistant", text: "Done: checklist.md is written." },
      ],
      { system: "You are terse." },
    );
    expect(messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "earlier question" },
      { role: "assistant", content: "earlier answer" },
      { role: "user", content: "write the checklist" },
      {
        role: "assistant",
        content: "On it.",
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: { name: "write_file", arguments: '{"path":"checklist.md"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: '{"bytes":120}' },
      { role: "assistant", content: "Done: checklist.md is written." },
    ]);
  });

  it("puts the results of a batch run call by call after one assistant message with every call", () => {
    const messages = toChatMessages([
      user("go"),
      call("c1"),
      result("c1"),
      call("c2", "search"),
      result("c2"),
    ]);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expectStrictPairing(messages);
  });

  it("keeps skipped results (a steered message) and puts the steered message after them", () => {
    const messages = toChatMessages([
      user("break the task down"),
      call("c1"),
      result("c1"),
      call("c2", "search"),
      result("c2", "skipped", "skipped for an incoming message"),
      user("actually, only the list"),
    ]);
    expectStrictPairing(messages);
    expect(messages.at(-2)).toEqual({
      role: "tool",
      tool_call_id: "c2",
      content: '{"status":"skipped","result":"skipped for an incoming message"}',
    });
    expect(messages.at(-1)).toEqual({ role: "user", content: "actually, only the list" });
  });

  it("gives a call without any result one that says so, and leaves out a result without its call", () => {
    const messages = toChatMessages([result("gone"), user("hi"), call("c1")]);
    expectStrictPairing(messages);
    expect(messages.filter((message) => message.role === "tool")).toEqual([
      { role: "tool", tool_call_id: "c1", content: NO_RESULT },
    ]);
  });

  it("moves anything stored between a call and its result after the result", () => {
    const messages = toChatMessages([user("hi"), call("c1"), user("are you there?"), result("c1")]);
    expectStrictPairing(messages);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "user"]);
  });

  it("sends Tiller's notes as system messages, or as user messages when asked", () => {
    const context: ModelMessage[] = [
      user("what's 2+2?"),
      { role: "assistant", text: "The capital of France is Paris." },
      { role: "note", text: "[note: the assistant reply above was never shown to the user]" },
      { role: "note", text: "Answer the newest user message." },
      { role: "assistant", text: "" },
    ];
    const system = toChatMessages(context);
    expect(system.slice(2)).toEqual([
      { role: "system", content: "[note: the assistant reply above was never shown to the user]" },
      { role: "system", content: "Answer the newest user message." },
    ]);
    expect(toChatMessages(context, { notesAs: "user" })[2]).toMatchObject({ role: "user" });
  });
});

describe("toChatMessages on contexts the gateway builds", () => {
  it("pairs every call with its result across a steer mid-batch, an interrupt mid-tool, a re-check and later turns", async () => {
    const clock = new SimulatedClock();
    const captured: ModelRequest[] = [];
    const scripted = new ScriptedModel(
      [
        {
          when: { latestUser: "break down", call: 1 },
          reply: {
            delayMs: 100,
            toolCalls: [
              { name: "write_file", args: { path: "plan.md" } },
              { name: "search", args: { query: "risks" } },
            ],
          },
        },
        { when: { latestUser: "long job" }, reply: { delayMs: 100, toolCalls: [{ name: "write_file" }] } },
        { reply: { delayMs: 100, text: "Re: {{latestUser}}" } },
      ],
      clock,
    );
    const slow = (name: string, cancellable: boolean) => ({
      name,
      cancellable,
      execute: (_args: Record<string, unknown>, context: { signal: AbortSignal }) =>
        sleep(clock, 3000, cancellable ? context.signal : undefined).then(() => "ok"),
    });
    const gateway = createGateway({
      model: {
        complete(request) {
          captured.push(request);
          return scripted.complete(request);
        },
      },
      tools: [slow("write_file", true), slow("search", true)],
      channels: { web: new LoopbackChannel({ now: () => clock.now() }) },
      clock,
      logger: silentLogger,
    });
    await gateway.start();
    const say = (id: string, text: string, mode?: string) =>
      gateway.receive({ session: "s", channel: "web", id, text, ...(mode ? { mode } : {}) });
    const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
    await say("m1", "break down the launch");
    await clock.advance(1000, () => gateway.isBusy);
    await say("m2", "only the checklist please"); // steered: `search` is skipped
    await idle();
    await say("m3", "start the long job");
    await clock.advance(1000, () => gateway.isBusy);
    await say("m4", "cancel that, new plan", "interrupt"); // cuts write_file off
    await idle();
    await say("m5", "and now?");
    await idle();
    await gateway.stop();

    expect(captured.length).toBeGreaterThanOrEqual(5);
    const last = captured.at(-1)!;
    const statuses = last.context.flatMap((message) =>
      message.role === "toolResult" ? [message.status] : [],
    );
    expect(statuses).toEqual(expect.arrayContaining(["done", "skipped", "cancelled"]));
    for (const request of captured) {
      const messages = toChatMessages(request.context);
      expectStrictPairing(messages);
      // Every call the model made is shown, with its own id.
      const calls = request.context.flatMap((message) =>
        message.role === "toolCall" ? [message.callId] : [],
      );
      const shown = messages.flatMap((message) =>
        message.role === "assistant" ? (message.tool_calls ?? []).map((toolCall) => toolCall.id) : [],
      );
      expect(shown).toEqual(calls);
      const users = request.context.flatMap((message) => (message.role === "user" ? [message.text] : []));
      expect(messages.flatMap((message) => (message.role === "user" ? [message.content] : []))).toEqual(
        users,
      );
    }
  });
});
