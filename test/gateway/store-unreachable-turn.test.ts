import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import type { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import { LeaseLostError, TillerError } from "../../src/errors.js";
import { createLaneScheduler, type LaneScheduler } from "../../src/lanes/lane-scheduler.js";
import { FAILED_NOTICE } from "../../src/policy/delivery.js";
import type { ExpectedHead, RecordBody } from "../../src/ports/store.js";
import { clockTool, gatewayOn } from "../support/gateway-on.js";

// The store (a cluster's database) stops answering at one step of a turn: while the turn asks for its
// lane slot, while its records are written. Each message is still answered once, with its reply, once
// the store is back; nobody is left silent and nothing is sent twice. Runs on the simulated clock.

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/** In-process lanes whose first `count` requests fail as the cluster lanes' do when their INSERT cannot reach the database. */
function lanesRefusing(count: number) {
  let refusedSoFar = 0;
  const build = (clock: SimulatedClock): LaneScheduler => {
    const inner = createLaneScheduler({ clock });
    return Object.assign(Object.create(inner) as LaneScheduler, {
      run: ((options, task) => {
        if (refusedSoFar < count) {
          refusedSoFar++;
          return Promise.reject(
            new TillerError("STORE_FAILED", "could not enqueue in the cluster lanes", {
              retryable: true,
              cause: refused(),
            }),
          );
        }
        return inner.run(options, task);
      }) as LaneScheduler["run"],
    });
  };
  return { build, refused: () => refusedSoFar };
}

/** Appends whose records match `which` fail as unreachable `count` times, then go through. */
class UnreachableStore extends MemoryStore {
  failures = 0;
  constructor(
    private readonly which: (records: RecordBody[]) => boolean,
    private readonly count: number,
  ) {
    super();
  }
  override async append(session: string, records: RecordBody[], expect: ExpectedHead) {
    if (this.which(records) && this.failures < this.count) {
      this.failures++;
      throw refused();
    }
    return super.append(session, records, expect);
  }
}

const shown = (g: ReturnType<typeof gatewayOn>) =>
  g.channel.sent.filter((s) => s.ok).map((s) => [s.kind, s.text]);

describe("a turn through a store that cannot be reached", () => {
  it("asks for its lane slot again until the lanes can store it: the message and the one queued behind it are answered once", async () => {
    const lanes = lanesRefusing(3);
    const g = gatewayOn(new MemoryStore(), { lanes: lanes.build });
    await g.gateway.start();
    const first = await g.send("m1", "first question", "followup");
    const second = await g.send("m2", "second question", "followup");
    await g.settle();
    expect(first.disposition).toBe("started");
    expect(second.disposition).toBe("queued");
    expect(shown(g)).toEqual([
      ["reply", "Re: first question"],
      ["reply", "Re: second question"],
    ]);
    expect(lanes.refused()).toBe(3);
    expect(g.events.map((e) => e.type)).not.toContain("lane.rejected");
  });

  it("holds the turn's records while the store is away: the user gets the reply, not the could-not-finish notice", async () => {
    const store = new UnreachableStore((records) => records.some((r) => r.role === "user"), 5);
    const g = gatewayOn(store);
    await g.gateway.start();
    await g.send("m1", "first question");
    await g.settle();
    expect(shown(g)).toEqual([["reply", "Re: first question"]]);
    expect(shown(g)).not.toContainEqual(["notice", FAILED_NOTICE]);
    expect(store.failures).toBe(5);
    const types = g.events.map((e) => e.type);
    expect(types).not.toContain("turn.storeFailed");
    // Stored once each, in order: the question, then its answer.
    const stored = (await store.read("web:1")).flatMap((r) =>
      r.role === "user" || r.role === "assistant" ? [[r.role, r.text]] : [],
    );
    expect(stored).toEqual([
      ["user", "first question"],
      ["assistant", "Re: first question"],
    ]);
  });

  it("holds a tool call's record until the store is back: the tool runs once, then the reply goes out", async () => {
    const store = new UnreachableStore((records) => records.some((r) => r.role === "toolCall"), 4);
    const ran: string[] = [];
    const g: ReturnType<typeof gatewayOn> = gatewayOn(store, {
      rules: [
        {
          when: { latestUser: "write", call: 1 },
          reply: { delayMs: 100, toolCalls: [{ name: "write_file" }] },
        },
        { reply: { delayMs: 100, text: "Re: {{latestUser}}" } },
      ],
      tools: [clockTool("write_file", 100, true, () => g.clock, ran)],
    });
    await g.gateway.start();
    await g.send("m1", "write the file");
    await g.settle();
    expect(store.failures).toBe(4);
    expect(ran).toHaveLength(1);
    expect(shown(g)).toEqual([["reply", "Re: write the file"]]);
  });

  it("resends a reply the channel did not take when its record is refused after the outage (the lease ran out): the user is not left silent", async () => {
    // The channel's first send fails (its own storage was away too); the final's record, once the store
    // answers, is refused because the turn's lease ran out meanwhile: no marker, so no recovery turn.
    class LeaseLostAtFinal extends MemoryStore {
      override async append(session: string, records: RecordBody[], expect: ExpectedHead) {
        if (records.some((r) => r.role === "assistant")) throw new LeaseLostError(session, 7);
        return super.append(session, records, expect);
      }
    }
    const store = new LeaseLostAtFinal();
    const channel = new LoopbackChannel({ failSends: 1 });
    const g = gatewayOn(store, { channel });
    await g.gateway.start();
    await g.send("m1", "first question");
    await g.settle();
    expect(channel.sent.map((s) => [s.ok, s.kind, s.text])).toEqual([
      [false, "reply", "Re: first question"],
      [true, "recovery", "Re: first question"],
    ]);
    // One deliveryId for both: a channel that deduplicates shows it once whatever happened.
    expect(new Set(channel.sent.map((s) => s.deliveryId)).size).toBe(1);
    expect(g.events.map((e) => e.type)).toContain("final.storeFailed");
  });
});
