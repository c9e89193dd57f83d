import { describe, expect, it } from "vitest";
import { DEMO_NOTICE, DEMO_TOOL, DemoModel, demoTool } from "../../src/adapters/demo-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { ModelMessage, ModelRequest } from "../../src/ports/model.js";

function request(
  context: ModelMessage[],
  turnStart: number,
  extra: Partial<ModelRequest> = {},
): ModelRequest {
  return {
    session: "web:1",
    runId: "r1",
    call: 1,
    recheck: false,
    recovery: false,
    review: false,
    context,
    turnStart,
    tools: ["message", DEMO_TOOL, "shout"].map((name) => ({
      name,
      description: "",
      parameters: { type: "object" },
    })),
    signal: new AbortController().signal,
    ...extra,
  };
}

const user = (text: string, messageId = "m"): ModelMessage => ({ role: "user", text, messageId });

describe("the demo model", () => {
  it("says it is a demo in the first reply of a conversation only, streaming word by word", async () => {
    const clock = new SimulatedClock();
    const model = new DemoModel({ clock, wordDelayMs: 10 });
    const deltas: string[] = [];
    const first = model.complete(request([user("hello")], 0, { onDelta: (text) => deltas.push(text) }));
    await clock.runUntilIdle();
    const reply = await first;
    expect(reply.text.startsWith(DEMO_NOTICE)).toBe(true);
    expect(deltas.join("")).toBe(reply.text);
    expect(deltas.length).toBeGreaterThan(10);
    const later = model.complete(
      request([user("hello"), { role: "assistant", text: "hi" }, user("again")], 2),
    );
    await clock.runUntilIdle();
    expect((await later).text).toBe(
      'You said: "again". Ask me to "run a task" to start a slow tool, then write while it runs (steer, /stop, /queue followup).',
    );
  });

  it("calls demo_task when asked for work, a user's tool when named, and answers with the result", async () => {
    const clock = new SimulatedClock();
    const model = new DemoModel({ clock, wordDelayMs: 0 });
    const work = model.complete(request([user("please run a task")], 0));
    await clock.runUntilIdle();
    expect((await work).toolCalls).toEqual([
      { callId: "r1-c1", name: DEMO_TOOL, args: { task: "please run a task" } },
    ]);
    const named = model.complete(request([user("shout it")], 0));
    await clock.runUntilIdle();
    expect((await named).toolCalls[0]).toMatchObject({ name: "shout", args: { input: "shout it" } });
    const done = model.complete(
      request(
        [
          user("please run a task"),
          { role: "toolCall", callId: "c1", name: DEMO_TOOL, args: {} },
          { role: "toolResult", callId: "c1", status: "done", result: { done: true, task: "the report" } },
          user("also the appendix"),
        ],
        0,
        { call: 2 },
      ),
    );
    await clock.runUntilIdle();
    const text = (await done).text;
    expect(text).toContain('demo_task finished: "the report" is done.');
    expect(text).toContain('While it ran you wrote: "also the appendix". Noted.');
  });

  it("stops streaming at once when the call is aborted; demo_task is cancelled by its signal", async () => {
    const clock = new SimulatedClock();
    const model = new DemoModel({ clock, wordDelayMs: 100 });
    const abort = new AbortController();
    const deltas: string[] = [];
    const call = model.complete(
      request([user("hello")], 0, { signal: abort.signal, onDelta: (text) => deltas.push(text) }),
    );
    await clock.advance(350);
    abort.abort(new Error("stopped"));
    await expect(call).rejects.toThrow("stopped");
    expect(deltas).toHaveLength(3);
    const tool = demoTool({ clock, durationMs: 5000 });
    const stop = new AbortController();
    const running = tool.execute(
      { task: "x" },
      { session: "s", runId: "r", callId: "c", signal: stop.signal },
    );
    await clock.advance(1000);
    stop.abort(new Error("cancelled"));
    await expect(running).rejects.toThrow("cancelled");
    expect(tool.cancellable).toBe(true);
  });

  it("says why it re-checked: a complaint is not a message that came in while answering", async () => {
    const clock = new SimulatedClock();
    const model = new DemoModel({ clock, wordDelayMs: 0 });
    const replyTo = async (note: string) => {
      const context: ModelMessage[] = [
        user("what time is it?", "m0"),
        { role: "assistant", text: "Hello!" },
        user("you did not answer my question", "m1"),
        { role: "assistant", text: "draft" },
        { role: "note", text: note },
      ];
      const pending = model.complete(request(context, 2, { recheck: true }));
      await clock.runUntilIdle();
      return (await pending).text;
    };
    const complaint = await replyTo(
      'The user says the previous reply missed their question: "you did not answer my question". Open by acknowledging that.',
    );
    expect(complaint).not.toMatch(/came in while I was answering/);
    expect(complaint).toMatch(/missed your question/);
    const newer = await replyTo('A newer user message arrived while you were drafting: "x". Address it.');
    expect(newer).toMatch(/came in while I was answering/);
  });
});
