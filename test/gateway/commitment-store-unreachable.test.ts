import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { StoredCommitment } from "../../src/ports/store.js";
import {
  commitmentGateway,
  decision,
  HOUR,
  PROPOSAL,
  recordingModel,
} from "../support/commitment-gateway.js";

// A follow-up being sent while the store (a cluster's database) goes away: the channel took it (or
// refused it), and the outcome cannot be written. The outcome is held and written once the store is
// back: a send that went out is recorded as sent with its receipt and never sent again; one that did
// not is tried again at a later tick. Runs on the simulated clock.

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/** Commitment saves matching `which` fail as unreachable `count` times, then go through. */
class UnreachableCommitments extends MemoryStore {
  failures = 0;
  constructor(
    private readonly which: (record: StoredCommitment) => boolean,
    private readonly count: number,
    clock: SimulatedClock,
  ) {
    super({ now: () => clock.now() });
  }
  override async saveCommitments(records: readonly StoredCommitment[]) {
    if (records.some(this.which) && this.failures < this.count) {
      this.failures++;
      throw refused();
    }
    return super.saveCommitments(records);
  }
}

/** The save that clears a send intent after a failed send (a pending version once an intent was saved). */
function clearedIntent() {
  let intentSaved = false;
  return (record: StoredCommitment) => {
    const { status, sending } = record as { status?: string; sending?: unknown };
    if (sending !== undefined) intentSaved = true;
    return intentSaved && status === "pending" && sending === undefined;
  };
}

async function dueCheckIn(store: MemoryStore, clock: SimulatedClock, channel: LoopbackChannel) {
  const { model, reviews } = recordingModel(() => decision("still_pending_user", "Still need the room?"));
  const g = commitmentGateway({ model, clock, store, channel });
  await g.gateway.start();
  await g.say("m1", "Please book a meeting room.");
  await g.idle(10);
  const proposed = await g.gateway.commitments.propose("web:1", PROPOSAL as never, { sourceMessageId: "m1" });
  if (!proposed.accepted) throw new Error(proposed.reason);
  await g.idle(30 * HOUR);
  return { ...g, reviews };
}

describe("a commitment's send while the store cannot be reached", () => {
  it("holds the outcome of a send that went out: recorded as sent with its receipt, in the transcript, never sent again", async () => {
    const clock = new SimulatedClock();
    const store = new UnreachableCommitments((r) => (r as { status?: string }).status === "sent", 5, clock);
    const channel = new LoopbackChannel({ now: () => clock.now() });
    const g = await dueCheckIn(store, clock, channel);
    expect(store.failures).toBe(5);
    expect(channel.sent.filter((s) => s.ok && s.kind === "commitment").map((s) => s.text)).toEqual([
      "Still need the room?",
    ]);
    expect(g.gateway.commitments.list()[0]).toMatchObject({
      status: "sent",
      sent: { receipt: "committed", text: "Still need the room?" },
    });
    // Not even offered to the channel again (a channel that cannot deduplicate would show it twice).
    expect(channel.duplicates).toEqual([]);
    expect(g.ofType("commitment.sent")).toHaveLength(1);
    const records = await store.read("web:1");
    expect(records.filter((r) => r.role === "assistant" && r.text === "Still need the room?")).toHaveLength(
      1,
    );
  });

  it("holds the outcome of a send the channel refused: the intent is cleared and a later tick sends it once", async () => {
    const clock = new SimulatedClock();
    // The first send of the session (the turn's reply) goes through; the check-in's first send fails.
    const channel = new LoopbackChannel({ now: () => clock.now(), failSends: 0 });
    let failNext = false;
    const original = channel.send.bind(channel);
    channel.send = async (message) => {
      if (message.kind === "commitment" && !failNext) {
        failNext = true;
        throw new Error("network down");
      }
      return original(message);
    };
    const store = new UnreachableCommitments(clearedIntent(), 5, clock);
    const g = await dueCheckIn(store, clock, channel);
    expect(store.failures).toBe(5);
    expect(channel.sent.filter((s) => s.ok && s.kind === "commitment").map((s) => s.text)).toEqual([
      "Still need the room?",
    ]);
    expect(channel.duplicates).toEqual([]);
    expect(g.reviews()).toHaveLength(2);
    expect(g.gateway.commitments.list()[0]).toMatchObject({ status: "sent", sent: { receipt: "committed" } });
  });
});
