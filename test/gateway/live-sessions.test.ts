import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AnyActorRef } from "xstate";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { ScriptedModel } from "../../src/adapters/scripted-model.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { TranscriptWriter } from "../../src/adapters/transcript-writer.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { ModelProvider, ModelReply, ModelRequest } from "../../src/ports/model.js";
import type { ExpectedHead, RecordBody, TranscriptRecord } from "../../src/ports/store.js";
import { type Deferred, deferred } from "../support/deferred.js";

// A live session (one that was busy recently) starts its next turn from memory: its actor stays alive
// (up to `limits.liveIdleSessions` idle ones, least recently used retired first) and the writer keeps
// its context window, which must never disagree with the store. The model call no longer waits for the
// turn's records to be stored, but nothing the turn does after the call happens before they are.

/** A memory store that counts window reads and can hold appends until the test releases them. */
class ObservedStore extends MemoryStore {
  windowReads = 0;
  gate: Deferred<void> | null = null;
  failNextAppend = false;

  override async readWindow(session: string): Promise<TranscriptRecord[]> {
    this.windowReads++;
    return super.readWindow(session);
  }

  override async append(session: string, records: RecordBody[], expect: ExpectedHead) {
    const gate = this.gate;
    if (gate) await gate.promise;
    if (this.failNextAppend) {
      this.failNextAppend = false;
      throw new Error("disk full");
    }
    return super.append(session, records, expect);
  }
}

function setup(config: object = {}, model?: ModelProvider) {
  const clock = new SimulatedClock();
  const store = new ObservedStore({ now: () => clock.now() });
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const created: string[] = [];
  const gateway = createGateway({
    config,
    model: model ?? new ScriptedModel([{ reply: { delayMs: 10, text: "Re: {{latestUser}}" } }], clock),
    channels: { web: channel },
    clock,
    store,
    logger: silentLogger,
    inspect: (event) => {
      const id = (event.actorRef as AnyActorRef).id;
      if (event.type === "@xstate.actor" && id.startsWith("session:")) created.push(id.slice(8));
    },
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  const idle = () => clock.runUntilIdle({ isBusy: () => gateway.isBusy });
  return { clock, store, channel, gateway, created, events, idle };
}

describe("live sessions", () => {
  it("keeps the most recently idle sessions' actors and rebuilds a retired one on its next message", async () => {
    const { gateway, created, channel, idle } = setup({ limits: { liveIdleSessions: 2 } });
    await gateway.start();
    let n = 0;
    const say = async (session: string) => {
      await gateway.receive({ session, channel: "web", id: `m${++n}`, text: `hello from ${session}` });
      await idle();
    };
    for (const session of ["a", "b", "c"]) await say(session);
    // c and b are the two most recent: their actors live; a was retired when c went idle.
    await say("b");
    await say("c");
    expect(created).toEqual(["a", "b", "c"]);
    await say("a");
    expect(created).toEqual(["a", "b", "c", "a"]);
    // Every message was answered, retired or not.
    expect(channel.sent.map((sent) => sent.text)).toEqual([
      "Re: hello from a",
      "Re: hello from b",
      "Re: hello from c",
      "Re: hello from b",
      "Re: hello from c",
      "Re: hello from a",
    ]);
    await gateway.stop();
  });

  it("with liveIdleSessions 0 every idle session is retired, and still answers", async () => {
    const { gateway, created, channel, idle } = setup({ limits: { liveIdleSessions: 0 } });
    await gateway.start();
    for (let i = 1; i <= 3; i++) {
      await gateway.receive({ session: "a", channel: "web", id: `m${i}`, text: `question ${i}` });
      await idle();
    }
    expect(created).toEqual(["a", "a", "a"]);
    expect(channel.sent).toHaveLength(3);
    expect(gateway.inspectSession("a")?.state).toBe("idle");
    await gateway.stop();
  });

  it("a live session's turns start from its cached window: the store's window is read once", async () => {
    const { gateway, store, idle } = setup();
    await gateway.start();
    for (let i = 1; i <= 10; i++) {
      await gateway.receive({ session: "a", channel: "web", id: `m${i}`, text: `question ${i}` });
      await idle();
    }
    expect(store.windowReads).toBe(1);
    // And the model saw the whole conversation each time: 9 earlier exchanges before the 10th question.
    const records = await store.readWindow("a");
    expect(records.filter((record) => record.role === "user")).toHaveLength(10);
    await gateway.stop();
  });

  it("calls the model while the turn's records are stored, but delivers nothing before they are durable", async () => {
    let called = 0;
    const model: ModelProvider = {
      async complete(request: ModelRequest): Promise<ModelReply> {
        called++;
        return { text: `Re: ${request.context.at(-1)?.role === "user" ? "ok" : "?"}`, toolCalls: [] };
      },
    };
    const { gateway, store, channel, clock, idle } = setup({}, model);
    await gateway.start();
    // Warm the session, then hold the disk.
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "first" });
    await idle();
    store.gate = deferred<void>();
    await gateway.receive({ session: "a", channel: "web", id: "m2", text: "second" });
    await clock.advance(1_000);
    expect(called).toBe(2);
    expect(channel.sent).toHaveLength(1);
    store.gate.resolve();
    store.gate = null;
    await idle();
    expect(channel.sent).toHaveLength(2);
    const roles = (await store.readWindow("a")).map((record) => `${record.role}:${record.seq}`);
    // Each final's delivery intent (custom) is durable before its send; the assistant record after it.
    expect(roles).toEqual(["user:1", "custom:2", "assistant:3", "user:4", "custom:5", "assistant:6"]);
    await gateway.stop();
  });

  it("a turn whose records cannot be stored fails instead of answering from a context it never kept", async () => {
    const { gateway, store, channel, events, idle } = setup();
    await gateway.start();
    await gateway.receive({ session: "a", channel: "web", id: "m1", text: "first" });
    await idle();
    store.failNextAppend = true;
    await gateway.receive({ session: "a", channel: "web", id: "m2", text: "second" });
    await idle();
    // The user is told, and the draft written from an unsaved context is not sent.
    expect(channel.sent.map((sent) => sent.text)).not.toContain("Re: second");
    expect(channel.sent.at(-1)?.text).toMatch(/could not finish this reply/);
    const ended = events.filter((event) => event.type === "turn.ended").map((event) => event.status);
    expect(ended).toEqual(["done", "failed"]);
    // The next turn starts from what the store really holds (the failed write dropped the cache).
    await gateway.receive({ session: "a", channel: "web", id: "m3", text: "third" });
    await idle();
    expect(channel.sent.map((sent) => sent.text)).toContain("Re: third");
    // The failed turn's message is kept (stored at the turn's end), so later turns see it.
    const texts = (await store.readWindow("a")).map((record) => (record.role === "user" ? record.text : ""));
    expect(texts.filter(Boolean)).toEqual(["first", "second", "third"]);
    await gateway.stop();
  });
});

type Op =
  | { kind: "append"; count: number }
  | { kind: "read" }
  | { kind: "appendWhileReading" }
  | { kind: "badAppend" }
  | { kind: "reset" }
  | { kind: "rotate" }
  | { kind: "keep"; keep: boolean };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("append" as const), count: fc.integer({ min: 1, max: 3 }) }),
  fc.constant({ kind: "read" as const }),
  fc.constant({ kind: "appendWhileReading" as const }),
  fc.constant({ kind: "badAppend" as const }),
  fc.constant({ kind: "reset" as const }),
  fc.constant({ kind: "rotate" as const }),
  fc.record({ kind: fc.constant("keep" as const), keep: fc.boolean() }),
);

describe("the writer's window cache", () => {
  it("never disagrees with the store, whatever the order of appends, reads, resets and rotations", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 30 }), async (ops) => {
        const store = new MemoryStore({ now: () => 0 });
        const writer = new TranscriptWriter(store);
        writer.keepWindow("s", true);
        let n = 0;
        const body = (): RecordBody => ({ role: "user", text: `t${++n}`, messageId: `m${n}` });
        for (const op of ops) {
          switch (op.kind) {
            case "append":
              await writer.append("s", Array.from({ length: op.count }, body));
              break;
            case "read":
              await writer.readWindow("s");
              break;
            case "appendWhileReading":
              await Promise.all([writer.readWindow("s"), writer.append("s", [body()])]);
              break;
            case "badAppend":
              await expect(
                writer.append("s", [{ role: "nobody" } as unknown as RecordBody]),
              ).rejects.toThrow();
              break;
            case "reset":
              await writer.reset("s");
              break;
            case "rotate":
              await writer.rotate("s");
              break;
            case "keep":
              writer.keepWindow("s", op.keep);
              break;
          }
          const cached = writer.cachedWindow("s");
          if (cached) expect(cached).toEqual(await store.readWindow("s"));
          expect(await writer.readWindow("s")).toEqual(await store.readWindow("s"));
        }
      }),
      { numRuns: 300 },
    );
  });
});
