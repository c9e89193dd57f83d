import { describe, expect, it } from "vitest";
import type { TillerEvent } from "../../src/events.js";
import { createTestGateway, InvariantError } from "../../src/testing/create-test-gateway.js";
import { InvariantMonitor } from "../../src/testing/invariant-monitor.js";

const ev = (at: number, type: string, fields: Record<string, unknown> = {}): TillerEvent => ({
  at,
  type,
  session: "s",
  ...fields,
});

describe("createTestGateway", () => {
  it("runs turns on a simulated clock with loopback channels and checks the invariants as it goes", async () => {
    const t = await createTestGateway({
      config: { queue: { mode: "steer" } },
      model: [
        {
          when: { call: 1, latestUser: "file" },
          reply: { delayMs: 200, toolCalls: [{ name: "write_file" }] },
        },
        { reply: { delayMs: 300, text: "Re: {{latestUser}}" } },
      ],
      tools: (clock) => [
        {
          name: "write_file",
          cancellable: false,
          execute: () => new Promise((resolve) => clock.setTimeout(() => resolve("written"), 2000)),
        },
      ],
    });
    const first = await t.receive({ session: "test:1", text: "update the file" });
    expect(first.disposition).toBe("started");
    await t.advance(1000);
    const steer = await t.receive({ session: "test:1", text: "and add a title" });
    expect(steer.disposition).toBe("steered");
    await t.settle();
    expect(t.deliveries.map((delivery) => delivery.text)).toEqual(["Re: and add a title"]);
    expect(t.violations).toEqual([]);
    expect(t.clock.now()).toBe(2500);
    await t.stop();
  });

  it("fails settle() with the broken invariant and the story of the message involved", async () => {
    const t = await createTestGateway({
      model: [{ reply: { delayMs: 100, text: "Your password is hunter2" } }],
      invariants: [
        (event) =>
          event.type === "final.delivered"
            ? { message: "a reply leaked a password", messageId: "m1", runId: String(event.runId) }
            : undefined,
      ],
    });
    await t.receive({ session: "test:1", text: "what is my password?", id: "m1" });
    const failure = await t.settle().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(InvariantError);
    const story = (failure as InvariantError).message.split("\n");
    expect(story[0]).toBe("invariant custom broken at 100 ms: a reply leaked a password");
    expect(story.slice(1, 5)).toEqual([
      "  0 ms  arrived; started (mode steer from default)",
      "  0 ms  turn test:1#1 started with it",
      "  0 ms  seen by model call 1 of test:1#1",
      "  100 ms  answered by test:1#1: delivered",
    ]);
    expect(story.some((line) => /^ {2}100 ms {2}final\.delivered$/.test(line))).toBe(true);
    await t.stop();
  });
});

describe("InvariantMonitor", () => {
  it("accepts a clean turn: ack, start, steer, end", () => {
    const monitor = new InvariantMonitor(1);
    monitor.observe(
      ev(0, "message.acked", { messageId: "m1", disposition: "started", text: "Working on it." }),
    );
    monitor.observe(ev(0, "turn.started", { runId: "r1", messageIds: ["m1"] }));
    monitor.observe(ev(5, "message.acked", { messageId: "m2", disposition: "steered", text: "Noted." }));
    monitor.observe(ev(6, "steer.injected", { runId: "r1", messageIds: ["m2"] }));
    monitor.observe(ev(7, "recheck.fired", { runId: "r1", reason: "newer-message" }));
    monitor.observe(ev(9, "turn.ended", { runId: "r1", status: "done" }));
    monitor.checkSettled(10);
    expect(monitor.violations).toEqual([]);
  });

  it("catches two runs at once, a lost message, a message answered twice and too many re-checks", () => {
    const monitor = new InvariantMonitor(1);
    monitor.observe(
      ev(0, "message.acked", { messageId: "m1", disposition: "started", text: "Working on it." }),
    );
    monitor.observe(ev(0, "message.acked", { messageId: "m9", disposition: "queued", text: "Queued." }));
    monitor.observe(ev(1, "turn.started", { runId: "r1", messageIds: ["m1"] }));
    monitor.observe(ev(2, "turn.started", { runId: "r2", messageIds: ["m1"] }));
    monitor.observe(ev(3, "recheck.fired", { runId: "r1" }));
    monitor.observe(ev(4, "recheck.fired", { runId: "r1" }));
    monitor.observe(ev(5, "turn.ended", { runId: "r1", status: "done" }));
    monitor.observe(ev(6, "turn.ended", { runId: "r2", status: "done" }));
    monitor.checkSettled(7);
    expect(monitor.violations.map((violation) => violation.invariant)).toEqual(["1", "4", "5", "5"]);
    expect(monitor.violations[2]!.message).toBe("m1 was answered by r1 and r2");
    expect(monitor.violations[3]!.message).toContain("m9 was accepted but no turn ever took it");
  });

  it("catches a recovery before its marker, a second marker, work admitted while draining and an unreviewed commitment send", () => {
    const monitor = new InvariantMonitor(1);
    monitor.observe(ev(0, "recovery.queued", { runId: "r1" }));
    monitor.observe(ev(1, "marker.appended", { runId: "r1" }));
    monitor.observe(ev(2, "marker.appended", { runId: "r1" }));
    monitor.observe(ev(3, "gateway.draining"));
    monitor.observe(
      ev(4, "message.acked", { messageId: "m1", disposition: "started", text: "Working on it." }),
    );
    monitor.observe(ev(5, "commitment.reviewed", { id: "c1", classification: "unclear" }));
    monitor.observe(ev(6, "commitment.sent", { id: "c1" }));
    monitor.observe(ev(7, "message.acked", { messageId: "m2", disposition: "started", text: "" }));
    expect(monitor.violations.map((violation) => violation.invariant)).toEqual([
      "6",
      "6",
      "9",
      "10",
      "12",
      "9",
    ]);
  });
});
