import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent, TillerEventOf } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import { sleep } from "../../src/ports/clock.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";

// Text the model streams reaches the event stream as `model.delta`: a UI can show the draft while the
// turn works. It is a draft (the stale-reply re-check may replace it), tagged with its call, and
// nothing is reported for a call that already ended or was aborted.

function setup(model: (clock: SimulatedClock) => ModelProvider) {
  const clock = new SimulatedClock();
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    model: model(clock),
    channels: { web: channel },
    clock,
    logger: silentLogger,
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  return { clock, channel, gateway, events, idle };
}

const deltasOf = (events: TillerEvent[], call?: number) =>
  events.filter(
    (event): event is TillerEventOf<"model.delta"> =>
      event.type === "model.delta" && (call === undefined || event.call === call),
  );

describe("model.delta", () => {
  it("streams the draft between the model call and the delivery, tagged with its session, run and call", async () => {
    // A provider that streams in pieces, as real ones do, each piece a little later on the clock.
    const { gateway, events, channel, idle } = setup((clock) => ({
      async complete(request) {
        const pieces = ["Re: ", "how is ", "the deploy ", "going?"];
        for (const piece of pieces) {
          await sleep(clock, 25);
          request.onDelta?.(piece);
        }
        return { text: pieces.join(""), toolCalls: [] };
      },
    }));
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "how is the deploy going?" });
    await idle();

    const deltas = deltasOf(events);
    expect(deltas.map((delta) => delta.at)).toEqual([25, 50, 75, 100]);
    expect(deltas.map((delta) => delta.text).join("")).toBe("Re: how is the deploy going?");
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Re: how is the deploy going?"]);
    const called = events.find((event) => event.type === "model.called")!;
    for (const delta of deltas)
      expect(delta).toMatchObject({ session: "a", runId: called.runId, call: 1, recheck: false });
    const types = events.map((event) => event.type);
    expect(types.indexOf("model.called")).toBeLessThan(events.indexOf(deltas[0]!));
    expect(events.indexOf(deltas.at(-1)!)).toBeLessThan(types.indexOf("final.delivered"));
    await gateway.stop();
  });

  it("a re-check pass streams its re-draft as its own call, so a UI can replace the stale draft", async () => {
    const { gateway, events, channel, clock, idle } = setup(
      (clock) =>
        new ScriptedModel(
          [
            { when: { recheck: true }, reply: { delayMs: 100, text: "Tomorrow at 9." } },
            { reply: { delayMs: 100, text: "It is sunny today." } },
          ],
          clock,
        ),
    );
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "what's the weather today?" });
    await clock.advance(50, () => gateway.isBusy);
    await gateway.receive({ session: "a", channel: "web", id: "m2", text: "actually, when is the meeting?" });
    await idle();

    expect(events.filter((event) => event.type === "recheck.fired")).toHaveLength(1);
    expect(
      deltasOf(events, 1)
        .map((delta) => delta.text)
        .join(""),
    ).toBe("It is sunny today.");
    const redraft = deltasOf(events, 2);
    expect(redraft.map((delta) => delta.text).join("")).toBe("Tomorrow at 9.");
    for (const delta of redraft) expect(delta.recheck).toBe(true);
    // Only the re-draft was delivered: the streamed first draft never was.
    expect(channel.sent.map((sent) => sent.text)).toEqual(["Tomorrow at 9."]);
    await gateway.stop();
  });

  it("drops deltas a model reports after its call was aborted or ended", async () => {
    const late: Array<(text: string) => void> = [];
    let calls = 0;
    const model: ModelProvider = {
      async complete(request: ModelRequest): Promise<ModelReply> {
        const onDelta = request.onDelta!;
        late.push(onDelta);
        onDelta("working ");
        if (++calls === 1) {
          // The first call hangs until /stop aborts it, and streams on a little while it stops.
          await new Promise((_, reject) =>
            request.signal.addEventListener(
              "abort",
              () => {
                onDelta("still talking ");
                reject(request.signal.reason);
              },
              { once: true },
            ),
          );
        }
        return { text: "done", toolCalls: [] };
      },
    };
    const { gateway, events, idle } = setup(() => model);
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "start the long job" });
    await gateway.receive({ session: "a", channel: "web", id: "c1", text: "/stop" });
    await idle();
    late[0]!("after the abort");
    expect(deltasOf(events).map((delta) => delta.text)).toEqual(["working "]);

    await gateway.receive({ session: "a", channel: "web", id: "m2", text: "something quick" });
    await idle();
    late[1]!("after the end");
    expect(deltasOf(events).map((delta) => delta.text)).toEqual(["working ", "working "]);
    expect(events.filter((event) => event.type === "final.delivered")).toHaveLength(1);
    await gateway.stop();
  });

  it("a delta streamed synchronously as the call starts still follows model.called", async () => {
    // The model is called before model.called is emitted (the first call is the latency that counts).
    const { gateway, events, idle } = setup(() => ({
      complete(request) {
        request.onDelta?.("at once");
        return Promise.resolve({ text: "at once", toolCalls: [] });
      },
    }));
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hi" });
    await idle();
    const types = events.map((event) => event.type).filter((type) => type.startsWith("model."));
    expect(types).toEqual(["model.called", "model.delta", "model.ended"]);
    expect(events.filter((event) => event.type === "model.called")).toHaveLength(1);
    await gateway.stop();
  });

  it("a model that throws instead of returning a promise still pairs model.called with model.ended", async () => {
    const { gateway, events, idle } = setup(() => ({
      complete(): Promise<ModelReply> {
        throw new Error("provider misconfigured");
      },
    }));
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "hi" });
    await idle();
    const model = events.filter((event) => event.type.startsWith("model."));
    expect(model.map((event) => event.type)).toEqual(["model.called", "model.ended"]);
    expect(model[1]).toMatchObject({ status: "failed" });
    await gateway.stop();
  });
});
