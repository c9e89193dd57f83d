import { afterEach, describe, expect, it, vi } from "vitest";
import type { TillerEvent, TillerEventType } from "../../src/events.js";
import { InvariantMonitor } from "../../src/testing/invariant-monitor.js";

// A planted bug: a gateway that checks a tool's `requires` against the first sender of the turn only,
// so a group member's message runs on the authority of whoever started the turn.
async function withBorrowedAuthority() {
  vi.resetModules();
  vi.doMock("../../src/policy/sender.js", async (importOriginal) => {
    const real = await importOriginal<typeof import("../../src/policy/sender.js")>();
    return {
      ...real,
      lackingScopes: (
        senders: Parameters<typeof real.lackingScopes>[0],
        _anonymous: boolean,
        requires?: string[],
      ) => real.lackingScopes(senders.slice(0, 1), senders.length === 0, requires),
    };
  });
  return await import("../../src/testing/index.js");
}

afterEach(() => {
  vi.doUnmock("../../src/policy/sender.js");
  vi.resetModules();
});

const config = { queue: { mode: "steer" as const, steerAcrossSenders: true } };
const model = [
  { when: { call: 1 }, reply: { delayMs: 200, toolCalls: [{ name: "lookup_order" }] } },
  { when: { call: 2 }, reply: { delayMs: 200, toolCalls: [{ name: "refund" }] } },
  { reply: { delayMs: 300, text: "Re: {{latestUser}}" } },
];
const tools = (clock: { setTimeout(fn: () => void, ms: number): unknown }) => [
  {
    name: "lookup_order",
    cancellable: true,
    execute: () => new Promise((resolve) => clock.setTimeout(() => resolve({ order: 7 }), 1000)),
  },
  { name: "refund", cancellable: false, requires: ["payments"], execute: async () => "refunded" },
];
const alice = { id: "alice", name: "Alice", authority: ["payments"] };
const bob = { id: "bob", name: "Bob" };

async function groupChat(kit: Awaited<ReturnType<typeof withBorrowedAuthority>>) {
  const t = await kit.createTestGateway({ config, model, tools });
  await t.receive({ session: "group:1", text: "look up order 7", sender: alice });
  await t.advance(500);
  const steer = await t.receive({ session: "group:1", text: "and refund mine too", sender: bob });
  expect(steer.disposition).toBe("steered");
  return t;
}

describe("invariant: authority never borrowed", () => {
  it("holds on the real gateway: a turn Bob joined cannot refund on Alice's scope", async () => {
    const t = await groupChat(await import("../../src/testing/index.js"));
    await t.settle();
    expect(t.events.filter((event) => event.type === "tool.refused").map((event) => event.name)).toEqual([
      "refund",
    ]);
    await t.stop();
  });

  it("catches a gateway that lets a sender borrow another's authority, with a readable failure", async () => {
    const kit = await withBorrowedAuthority();
    const t = await groupChat(kit);
    const failure = await t.settle().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(kit.InvariantError);
    const story = (failure as Error).message.split("\n");
    expect(story[0]).toBe(
      'invariant authority never borrowed broken at 1400 ms: tool refund ran in run group:1#1 although Bob (bob), who wrote m2 in that turn, lacks "payments": it ran on the authority of Alice (alice)',
    );
    expect(story).toContain("  500 ms  arrived from Bob (bob); steered (mode steer from global)");
    await t.stop();
  });
});

describe("AuthorityCheck in the monitor", () => {
  const ev = (at: number, type: TillerEventType, fields: Record<string, unknown>): TillerEvent =>
    ({ at, type, session: "s", ...fields }) as TillerEvent;
  const requires = (tool: string) => (tool === "refund" ? ["payments"] : undefined);

  it("counts held steering and the anonymous user, and ignores tools that require nothing", () => {
    const monitor = new InvariantMonitor(1, { requires });
    monitor.observe(
      ev(0, "message.acked", { messageId: "m1", disposition: "started", text: "On it.", sender: alice }),
    );
    monitor.observe(ev(0, "turn.started", { runId: "r1", messageIds: ["m1"] }));
    monitor.observe(ev(1, "tool.started", { runId: "r1", callId: "c1", name: "refund", args: {} }));
    monitor.observe(
      ev(1, "tool.ended", { runId: "r1", callId: "c1", name: "refund", args: {}, status: "done" }),
    );
    expect(monitor.violations).toEqual([]);
    // An anonymous message held as steering narrows the turn at once: it holds no scope.
    monitor.observe(
      ev(2, "message.acked", { messageId: "m2", disposition: "steered", text: "Noted.", runId: "r1" }),
    );
    monitor.observe(ev(3, "tool.started", { runId: "r1", callId: "c2", name: "lookup", args: {} }));
    monitor.observe(ev(4, "steer.injected", { runId: "r1", messageIds: ["m2"] }));
    monitor.observe(ev(5, "tool.started", { runId: "r1", callId: "c3", name: "refund", args: {} }));
    monitor.observe(
      ev(6, "tool.ended", { runId: "r1", callId: "c3", name: "refund", args: {}, status: "done" }),
    );
    // A refused call never ran: nothing was borrowed.
    monitor.observe(ev(7, "tool.started", { runId: "r1", callId: "c4", name: "refund", args: {} }));
    monitor.observe(
      ev(7, "tool.refused", {
        runId: "r1",
        callId: "c4",
        name: "refund",
        requires: ["payments"],
        lacking: [],
      }),
    );
    monitor.observe(
      ev(7, "tool.ended", { runId: "r1", callId: "c4", name: "refund", args: {}, status: "failed" }),
    );
    expect(monitor.violations.map((violation) => [violation.invariant, violation.messageId])).toEqual([
      ["no tool after a steer", "m2"],
      ["authority never borrowed", "m2"],
    ]);
    expect(monitor.violations[1]!.message).toContain("the anonymous user, who wrote m2 in that turn, lacks");
  });
});
