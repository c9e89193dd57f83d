import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { ToolDefinition } from "../../src/ports/tool.js";
import {
  commitmentGateway,
  decision,
  HOUR,
  PROPOSAL,
  recordingModel,
  StallingChannel,
} from "../support/commitment-gateway.js";

// Commitments through the library API: creation paths, the review's context and tools, restarts in the
// middle of a send, and the operator API.

describe("commitment creation", () => {
  it("takes proposals from the extractCommitments hook after each finished turn, through the same checks", async () => {
    const { model } = recordingModel(() => decision("unclear"));
    const seen: Array<{ runId: string; messageIds: string[]; finalText: string }> = [];
    const { gateway, say, idle, ofType } = commitmentGateway({
      model,
      extra: {
        extractCommitments: (turn) => {
          seen.push({ runId: turn.runId, messageIds: turn.messageIds, finalText: turn.finalText });
          return [
            { ...PROPOSAL, session: "somewhere:else" } as never,
            { ...PROPOSAL, dedupeKey: "care", kind: "care_check_in", confidence: 0.8 },
          ];
        },
      },
    });
    await gateway.start();
    await say("m1", "Please book a meeting room.");
    await idle(10);
    expect(seen).toEqual([
      { runId: expect.any(String), messageIds: ["m1"], finalText: "Thursday or Friday?" },
    ]);
    const [stored] = gateway.commitments.list();
    // The payload's target is ignored: it belongs to the session that made it.
    expect(gateway.commitments.list()).toHaveLength(1);
    expect(stored).toMatchObject({
      session: "web:1",
      source: "extractor",
      sourceMessageId: "m1",
      status: "pending",
    });
    // No latest: 12 h after the earliest; never earlier than one heartbeat after creation.
    expect(stored!.dueWindow.earliestAt).toBe(stored!.createdAt + HOUR);
    expect(stored!.dueWindow.latestAt).toBe(stored!.dueWindow.earliestAt + 12 * HOUR);
    expect(stored!.expiresAt).toBe(stored!.dueWindow.latestAt + 72 * HOUR);
    // A care check-in needs 0.86.
    expect(ofType("commitment.rejected")).toMatchObject([{ field: "confidence" }]);
    await gateway.stop();
  });

  it("refuses a malformed tool call with the field named, so the model can fix it", async () => {
    const { model, requests } = recordingModel(
      () => decision("unclear"),
      (request) =>
        request.call === 1
          ? {
              text: "",
              toolCalls: [
                { callId: "t1", name: "commitment", args: { ...PROPOSAL, reason: "x".repeat(1001) } },
              ],
            }
          : { text: "ok", toolCalls: [] },
    );
    const { gateway, say, idle } = commitmentGateway({ model });
    await gateway.start();
    await say("m1", "hi");
    await idle(10);
    const result = requests[1]!.context.find((message) => message.role === "toolResult");
    expect(result).toMatchObject({
      status: "failed",
      result: { error: expect.stringContaining("args.reason") },
    });
    expect(gateway.commitments.list()).toEqual([]);
    await gateway.stop();
  });
});

describe("the review", () => {
  it("sees the conversation since the source, the fenced record, the read-only tools and the snapshot, and may call only those", async () => {
    const executed: string[] = [];
    const tools: ToolDefinition[] = [
      {
        name: "read_sheet",
        readOnly: true,
        cancellable: true,
        execute: async () => {
          executed.push("read_sheet");
          return "A, C, D";
        },
      },
      {
        name: "write_sheet",
        cancellable: false,
        execute: async () => {
          executed.push("write_sheet");
          return "written";
        },
      },
    ];
    let step = 0;
    const { model, reviews } = recordingModel(() => {
      step++;
      if (step === 1)
        return {
          text: "",
          toolCalls: [
            { callId: "r1", name: "read_sheet", args: {} },
            { callId: "r2", name: "write_sheet", args: {} },
          ],
        };
      return decision("still_pending_user", "The sheet lists A, C and D: shall I add the pricing column?");
    });
    const { gateway, say, idle, channel } = commitmentGateway({
      model,
      tools,
      extra: { commitmentSnapshot: (commitment) => ({ sheet: "A, C, D", about: commitment.dedupeKey }) },
    });
    await gateway.start();
    await gateway.receive({ session: "web:1", channel: "web", id: "m0", text: "earlier" });
    await idle(5);
    await say("m1", "Please book a meeting room.");
    await idle(10);
    // The tool path creates it from a turn; here, the operator's own API is the library's.
    expect(await gatewayPropose(gateway, { ...PROPOSAL, dueWindow: { earliestMs: HOUR } })).toMatchObject({
      accepted: true,
    });
    await idle(3 * HOUR);
    expect(executed).toEqual(["read_sheet"]);
    const [first, second] = reviews();
    expect(first!.tools.map((tool) => tool.name)).toEqual(["read_sheet", "commitment_decision"]);
    expect(first!.review).toBe(true);
    const shown = first!.context.map((message) => (message.role === "user" ? message.text : message.role));
    expect(shown.slice(0, 3)).toEqual(["earlier", "assistant", "Please book a meeting room."]);
    const results = second!.context.filter((message) => message.role === "toolResult");
    expect(results.map((message) => (message as { status: string }).status)).toEqual([
      "done",
      "done",
      "done",
      "refused",
    ]);
    expect(JSON.stringify(results[1])).toContain("A, C, D");
    expect(channel.sent.filter((sent) => sent.kind === "commitment").map((sent) => sent.text)).toEqual([
      "The sheet lists A, C and D: shall I add the pricing column?",
    ]);
    await gateway.stop();
  });
});

describe("at most once across a crash mid-send", () => {
  it("a restart that finds the sending intent without an outcome never sends again, and counts it as sent (receipt unknown)", async () => {
    // Each process has its own clock (its timers die with it); the store is the disk they share.
    let clock = new SimulatedClock();
    const store = new MemoryStore({ now: () => clock.now() });
    const { model } = recordingModel(() => decision("still_pending_user", "Do you still need the room?"));
    const stalling = new StallingChannel();
    const first = commitmentGateway({ model, clock, store, channel: stalling });
    await first.gateway.start();
    await first.say("m1", "Please book a meeting room.");
    await first.idle(10);
    await gatewayPropose(first.gateway, PROPOSAL);
    // Due 1 h after creation: the 2 h tick reviews it and the send is still in flight a second later.
    await first.idle(2 * HOUR + 1000);
    expect(stalling.sent.filter((sent) => sent.kind === "commitment")).toHaveLength(1);
    expect(first.gateway.commitments.list()[0]).toMatchObject({
      status: "pending",
      sending: { text: "Do you still need the room?" },
    });
    // kill -9: the old process is abandoned with its timers; a new one starts on the same store.
    clock = new SimulatedClock(clock.now());
    const channel = new LoopbackChannel({ now: () => clock.now() });
    const second = commitmentGateway({ model, clock, store, channel });
    await second.gateway.start();
    await second.idle(30 * HOUR);
    expect(channel.sent).toEqual([]);
    expect(second.gateway.commitments.list()[0]).toMatchObject({
      status: "sent",
      sent: { receipt: "unknown", text: "Do you still need the room?" },
    });
    expect(second.ofType("commitment.sent")).toEqual([]);
    expect(second.ofType("commitment.sendInterrupted")).toMatchObject([{ receipt: "unknown" }]);
    expect(
      second.gateway.explainCommitment(second.gateway.commitments.list()[0]!.id)?.timeline.at(-1)?.what,
    ).toContain("never sent again");
  });

  it("a failed send leaves it pending for the next tick, which reviews and sends it", async () => {
    const { model, reviews } = recordingModel(() => decision("still_pending_user", "Still need the room?"));
    const channel = new LoopbackChannel({ failSends: 4 });
    const { gateway, say, idle, ofType } = commitmentGateway({ model, channel });
    await gateway.start();
    await say("m1", "Please book a meeting room.");
    await idle(10);
    await gatewayPropose(gateway, PROPOSAL);
    await idle(10 * HOUR);
    // The first reply, its one resend and the could-not-deliver notice take three failures; the first
    // check-in takes the fourth.
    expect(ofType("commitment.retried").map((event) => event.why)).toEqual([
      expect.stringContaining("send failed"),
    ]);
    expect(reviews()).toHaveLength(2);
    expect(channel.sent.filter((sent) => sent.ok && sent.kind === "commitment")).toHaveLength(1);
    expect(gateway.commitments.list()[0]).toMatchObject({ status: "sent" });
    await gateway.stop();
  });
});

describe("operators", () => {
  it("list filters by session and status, dismiss ends a pending one with no review, explain tells the story", async () => {
    const { model, reviews } = recordingModel(() => decision("still_pending_user", "Still need it?"));
    const { gateway, say, idle, ofType } = commitmentGateway({ model });
    await gateway.start();
    await say("m1", "Please book a meeting room.");
    await idle(10);
    const a = await gatewayPropose(gateway, PROPOSAL);
    const b = await gatewayPropose(gateway, { ...PROPOSAL, dedupeKey: "other" });
    expect(gateway.commitments.list({ session: "web:1" })).toHaveLength(2);
    expect(gateway.commitments.list({ session: "nobody" })).toEqual([]);
    const dismissed = await gateway.commitments.dismiss(a.id);
    expect(dismissed).toMatchObject({ status: "dismissed", dismissedWhy: "operator" });
    expect(await gateway.commitments.dismiss("nope")).toBeUndefined();
    expect(gateway.commitments.list({ status: "pending" }).map((c) => c.id)).toEqual([b.id]);
    await idle(3 * HOUR);
    expect(reviews()).toHaveLength(1);
    expect(ofType("commitment.dismissed")).toMatchObject([{ id: a.id, why: "operator" }]);
    // Dismissing what was already sent changes nothing.
    expect(await gateway.commitments.dismiss(b.id)).toMatchObject({ status: "sent" });
    const story = gateway.explainCommitment(b.id)!;
    expect(story.timeline.map((entry) => entry.what)).toEqual([
      "created (open_loop, from api, after message m1), due from 3600010 to 46800010",
      "due (review 1)",
      "reviewed: still_pending_user (model review)",
      'sent: "Still need it?"',
    ]);
    expect(gateway.explainCommitment("nope")).toBeUndefined();
    await gateway.stop();
  });
});

/** Proposes through the same checks as the `commitment` tool, anchored at the test's message m1. */
async function gatewayPropose(gateway: ReturnType<typeof commitmentGateway>["gateway"], proposal: object) {
  const outcome = await gateway.commitments.propose("web:1", proposal as never, { sourceMessageId: "m1" });
  if (!outcome.accepted) throw new Error(outcome.reason);
  return outcome;
}
