import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { Commitment } from "../../src/machines/commitment.types.js";
import type { StoredCommitment } from "../../src/ports/store.js";
import { commitmentGateway, decision, HOUR, recordingModel } from "../support/commitment-gateway.js";

// Dedupe holds for whatever the store holds: two pending commitments of one session and dedupeKey
// (from before a restart, or an import) make one check-in, not two.

function pending(id: string, dueAt: number, createdAt = 0): Commitment {
  return {
    id,
    session: "web:1",
    kind: "open_loop",
    source: "tool",
    reason: "asked which slot",
    suggestedText: "Which slot should I book?",
    dedupeKey: "booking:slot",
    confidence: 0.9,
    dueWindow: { earliestAt: dueAt, latestAt: dueAt + 6 * HOUR },
    sourceMessageId: "src",
    sourceRunId: "r0",
    createdAt,
    updatedAt: createdAt,
    status: "pending",
    dueAt,
    attempts: 0,
    expiresAt: dueAt + 12 * HOUR,
  };
}

async function twoStored(first: Commitment, second: Commitment) {
  const clock = new SimulatedClock();
  const store = new MemoryStore({ now: () => clock.now() });
  await store.append(
    "web:1",
    [
      { role: "user", text: "Please book a room.", messageId: "src" },
      { role: "assistant", text: "Thursday or Friday?", runId: "r0", delivered: true },
    ],
    await store.open("web:1"),
  );
  await store.saveCommitments([first, second] as unknown as StoredCommitment[]);
  const { model, reviews } = recordingModel(() =>
    decision("still_pending_user", "Thursday or Friday: which one should I book?"),
  );
  const world = commitmentGateway({ model, clock, store });
  await world.gateway.start();
  await world.idle(24 * HOUR);
  const sent = world.channel.sent.filter((message) => message.kind === "commitment" && message.ok);
  const listed = world.gateway.commitments.list();
  await world.gateway.stop();
  return { sent, reviews: reviews(), listed, world };
}

describe("dedupe of stored commitments", () => {
  it("two pending commitments of one dedupeKey due an hour apart: one review, one check-in", async () => {
    const { sent, reviews, listed, world } = await twoStored(pending("c1", HOUR), pending("c2", 2 * HOUR));
    expect(sent).toHaveLength(1);
    expect(reviews).toHaveLength(1);
    expect(listed.map((c) => [c.id, c.status, c.dismissedWhy])).toEqual([
      ["c1", "sent", undefined],
      ["c2", "dismissed", "duplicate"],
    ]);
    expect(world.ofType("commitment.dismissed")).toEqual([
      expect.objectContaining({ id: "c2", why: "duplicate" }),
    ]);
  });

  it("due in the same tick: still one check-in", async () => {
    const { sent, listed } = await twoStored(pending("c1", HOUR), pending("c2", HOUR));
    expect(sent).toHaveLength(1);
    expect(listed.filter((c) => c.status === "sent")).toHaveLength(1);
  });

  it("a commitment proposed after the previous one of its key was sent is a new check-in, not a duplicate", async () => {
    const sentBefore = {
      ...pending("c1", HOUR),
      status: "sent",
      sent: { at: HOUR, text: "x", receipt: "committed" },
    };
    const { sent } = await twoStored(sentBefore as Commitment, pending("c2", 3 * HOUR, 2 * HOUR));
    expect(sent).toHaveLength(1);
  });
});
