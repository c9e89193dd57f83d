import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { FAILED_NOTICE } from "../../src/policy/delivery.js";
import type { ExpectedHead, RecordBody } from "../../src/ports/store.js";
import { DELIVERY_INTENT } from "../../src/ports/store.js";
import { gatewayOn } from "../support/gateway-on.js";

// The store stops answering (a database restarting or failing over) around a reply's send: its intent,
// its receipt (the final's record) and a notice's intent are held and written once it is back, so a
// resumed session never sends the reply again. Runs on the simulated clock.

type Which = (records: RecordBody[]) => boolean;
const finalRecord: Which = (records) => records.some((r) => r.role === "assistant");
const intent: Which = (records) =>
  records.some((r) => r.role === "custom" && r.customType === DELIVERY_INTENT);
const journal: Which = (records) => records.some((r) => r.role === "user");

/** Appends matching `which` fail `count` times with `error()`, then go through. */
class UnreachableStore extends MemoryStore {
  failures = 0;
  constructor(
    private readonly which: Which,
    private readonly count: number,
    private readonly error: () => Error,
  ) {
    super();
  }
  override async append(session: string, records: RecordBody[], expect: ExpectedHead) {
    if (this.which(records) && this.failures < this.count) {
      this.failures++;
      throw this.error();
    }
    return super.append(session, records, expect);
  }
}

const refused = () =>
  Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });

/** m1 answered on a first process while the fault lasts; then a second process resumes the store. */
async function answerThenResume(store: UnreachableStore) {
  const first = gatewayOn(store);
  await first.gateway.start();
  await first.send("m1", "first question");
  await first.settle();
  const second = gatewayOn(store);
  await second.gateway.start();
  await second.settle();
  const shown = (g: typeof first) => g.channel.sent.filter((s) => s.ok).map((s) => [s.kind, s.text]);
  return { first: shown(first), second: shown(second), events: first.events.map((e) => e.type) };
}

describe("a store that cannot be reached around a reply", () => {
  it("holds the final's record until the store is back: a resumed session does not send the reply again", async () => {
    const store = new UnreachableStore(finalRecord, 4, refused);
    const seen = await answerThenResume(store);
    expect(store.failures).toBe(4);
    expect(seen.first).toEqual([["reply", "Re: first question"]]);
    expect(seen.second).toEqual([]);
    expect(seen.events).not.toContain("final.storeFailed");
  });

  it("holds the reply's intent until the store is back, then sends it once", async () => {
    const store = new UnreachableStore(intent, 3, refused);
    const seen = await answerThenResume(store);
    expect(seen.first).toEqual([["reply", "Re: first question"]]);
    expect(seen.second).toEqual([]);
    expect(seen.events).not.toContain("delivery.intentFailed");
  });

  it("holds the could-not-finish notice's intent until the store is back: the user is told", async () => {
    // The turn's records fail for another reason (EIO); the notice's intent then finds the store away.
    let eio = true;
    const store = new UnreachableStore(
      (records) => journal(records) || intent(records),
      4,
      () => {
        if (eio) {
          eio = false;
          return Object.assign(new Error("EIO: injected"), { code: "EIO" });
        }
        return refused();
      },
    );
    const g = gatewayOn(store);
    await g.gateway.start();
    await g.send("m1", "first question");
    await g.settle();
    expect(g.channel.sent.filter((s) => s.ok).map((s) => [s.kind, s.text])).toEqual([
      ["notice", FAILED_NOTICE],
    ]);
    expect(g.events.map((e) => e.type)).not.toContain("delivery.intentFailed");
  });
});
