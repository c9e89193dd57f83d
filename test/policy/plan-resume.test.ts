import { describe, expect, it } from "vitest";
import type { QueueItem } from "../../src/machines/session.types.js";
import { type PersistedSession, planResume } from "../../src/policy/plan-resume.js";
import type { OwnedMessage } from "../../src/policy/turn-context.js";
import type { TranscriptRecord } from "../../src/ports/store.js";

// A turn can start, and store its messages, a moment before the saved state says it left the queue: a
// crash in that moment leaves a state whose queue still holds messages the transcript already has. The
// restart must neither store nor answer them twice.

let seq = 0;
function record(body: Record<string, unknown>): TranscriptRecord {
  seq++;
  return { id: `r${seq}`, seq, at: seq, sessionId: "s1", revision: 1, ...body } as TranscriptRecord;
}
const user = (id: string) => record({ role: "user", text: `text of ${id}`, messageId: id, channel: "web" });
const final = (runId: string, delivered: boolean, text = "Done.") =>
  record({ role: "assistant", text, runId, delivered });
const message = (id: string): OwnedMessage => ({ id, text: `text of ${id}`, channel: "web", at: 0 });

function state(queue: QueueItem[], pending: PersistedSession["pending"] = null): PersistedSession {
  return { version: 1, turnSeq: 1, runId: pending ? "s#1" : null, pending, queue, summaries: [] };
}

/** One queued follow-up per message id, in order. */
function followups(...ids: string[]): QueueItem[] {
  return ids.map((id) => ({ kind: "followup", messages: [message(id)] }));
}

const LONG_FINAL = "This is the long answer. ".repeat(20);

describe("planResume: queued work that had already started", () => {
  it("runs a queued follow-up whose message is stored but unanswered again, as a resumed turn", () => {
    const records = [user("k1"), final("s#1", true), user("k2")];
    const plan = planResume(state(followups("k2", "k3")), records, "auto");
    expect(plan.queue).toEqual([
      { kind: "followup", messages: [message("k2")], resumed: true },
      { kind: "followup", messages: [message("k3")] },
    ]);
    expect(plan.notes.join(" ")).toMatch(/k2 was cut off before its start was saved/);
  });

  it("drops a queued follow-up whose turn was answered and delivered before the crash", () => {
    const records = [user("k1"), final("s#1", true), user("k2"), final("s#2", true)];
    const plan = planResume(state([{ kind: "followup", messages: [message("k2")] }]), records, "auto");
    expect(plan.queue).toEqual([]);
    expect(plan.repairs).toEqual([]);
  });

  it("marks a stranded final of such a turn and queues its one recovery first", () => {
    const records = [user("k2"), final("s#2", false, LONG_FINAL)];
    const plan = planResume(state(followups("k2", "k3")), records, "auto");
    expect(plan.repairs).toHaveLength(1);
    expect(plan.repairs[0]).toMatchObject({ customType: "tiller.undelivered-final" });
    expect(plan.queue.map((item) => item.kind)).toEqual(["recovery", "followup"]);
    expect(plan.queue[0]).toMatchObject({ strandedRunId: "s#2", text: LONG_FINAL });
  });

  it("turns a stored collect burst into a resumed turn that owns every message of the burst", () => {
    const records = [user("c1"), user("c2")];
    const plan = planResume(
      state([{ kind: "collect", channel: "web", messages: [message("c1"), message("c2")] }]),
      records,
      "auto",
    );
    expect(plan.queue).toEqual([
      { kind: "followup", messages: [message("c1"), message("c2")], resumed: true },
    ]);
  });

  it("leaves queued work that never started alone", () => {
    const plan = planResume(
      state([{ kind: "followup", messages: [message("k9")] }]),
      [user("k1"), final("s#1", true)],
      "auto",
    );
    expect(plan.queue).toEqual([{ kind: "followup", messages: [message("k9")] }]);
    expect(plan.notes).toEqual([]);
  });

  it("treats a pending turn whose grant was never saved (no run id) like one that was", () => {
    const pending = { kind: "turn" as const, messages: [message("k1")], summaries: [] };
    const answered = planResume(
      { ...state([], pending), runId: null },
      [user("k1"), final("s#7", true)],
      "auto",
    );
    expect(answered.queue).toEqual([]);
    const cut = planResume({ ...state([], pending), runId: null }, [user("k1")], "auto");
    expect(cut.queue).toEqual([{ kind: "followup", messages: [message("k1")], resumed: true }]);
  });
});

describe("planResume: messages that joined a turn after its final", () => {
  it("answers a steered message the final never saw once, next (found by the whole-gateway kill -9)", () => {
    const records = [user("a1"), final("s#1", true, "Re: a1")];
    const pending = { kind: "turn" as const, messages: [message("a1"), message("a2")], summaries: [] };
    const plan = planResume(state([], pending), records, "auto");
    expect(plan.queue).toEqual([{ kind: "followup", messages: [message("a2")], resumed: true }]);
  });

  it("runs nothing again when every message of the settled turn is stored", () => {
    const records = [user("a1"), user("a2"), final("s#1", true, "Re: a2")];
    const pending = { kind: "turn" as const, messages: [message("a1"), message("a2")], summaries: [] };
    expect(planResume(state([], pending), records, "auto").queue).toEqual([]);
  });
});

describe("planResume: a subagent's task", () => {
  const task = (id: string): OwnedMessage => ({ ...message(id), trigger: "subagent" });

  it("never runs a cut-off task again nor recovers its stored final: nobody waits for it", () => {
    // The child's final was stored (never delivered: it goes back to its tool) just before the crash.
    const records = [user("p:sub:1:task"), final("s#1", false, LONG_FINAL)];
    const pending = { kind: "turn" as const, messages: [task("p:sub:1:task")], summaries: [] };
    const plan = planResume(state([], pending), records, "auto");
    expect(plan.queue).toEqual([]);
    expect(plan.repairs).toEqual([
      {
        role: "custom",
        customType: "tiller.subagent-cut-off",
        display: false,
        details: { messageIds: ["p:sub:1:task"], runId: "s#1" },
      },
    ]);
  });

  it("drops a queued task but keeps a message someone sent to the child", () => {
    const plan = planResume(
      state([{ kind: "followup", messages: [task("p:sub:1:task")] }, ...followups("u1")]),
      [],
      "auto",
    );
    expect(plan.queue).toEqual(followups("u1"));
    expect(plan.repairs.map((repair) => repair.role === "custom" && repair.customType)).toEqual([
      "tiller.subagent-cut-off",
    ]);
  });
});
