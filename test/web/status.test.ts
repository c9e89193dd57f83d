import { describe, expect, it } from "vitest";
import { statusOf } from "../../web/src/status.js";

// The status line at the top of the chat: what the session does, told apart at a glance.
describe("statusOf", () => {
  it("tells streaming, a tool batch and a re-check apart", () => {
    expect(statusOf({ session: { turn: "running" }, run: "streaming", modelCall: 1, queued: 0 })).toEqual({
      tone: "stream",
      label: "Streaming a reply",
      detail: "model call 1",
    });
    expect(
      statusOf({
        session: { turn: "running" },
        run: { toolBatch: { toolRunning: "working" } },
        currentTool: { name: "write_file", cancellable: false },
        queued: 0,
      }),
    ).toMatchObject({
      tone: "tool",
      label: "Running tool write_file",
      detail: "cannot be cancelled; steering waits for it",
    });
    expect(
      statusOf({ session: { turn: "running" }, run: "streaming", recheckReason: "newer-message", queued: 0 }),
    ).toMatchObject({
      tone: "recheck",
      label: "Re-drafting after a re-check",
      detail: "the draft was stale: newer-message",
    });
  });

  it("says why a message waits: the lane, or its own turn behind the running one", () => {
    expect(
      statusOf({
        session: { turn: "waitingForLane" },
        queued: 0,
        lane: { name: "main", active: 2, capacity: 2, queued: 3 },
      }),
    ).toEqual({
      tone: "wait",
      label: "Waiting for a lane slot",
      detail: "lane main: 2 of 2 slots busy, 3 queued",
    });
    expect(statusOf({ session: { turn: "running" }, run: "streaming", queued: 2 }).detail).toBe(
      "2 messages waiting for their own turn",
    );
    expect(statusOf({ session: "idle", queued: 0 })).toEqual({ tone: "idle", label: "Idle" });
  });
});
