import type { Commitment } from "../../src/ports/commitment.js";

/** A whole stored commitment for store and CLI tests: `id` and `status` first (tests read the JSON), then defaults, then `fields`. */
export function commitmentRecord(fields: Pick<Commitment, "id"> & Partial<Commitment>): Commitment {
  const { id, status = "pending", ...rest } = fields;
  return {
    id,
    status,
    session: "s",
    kind: "open_loop",
    source: "tool",
    reason: "",
    suggestedText: "",
    dedupeKey: id,
    confidence: 1,
    dueWindow: { earliestAt: 0, latestAt: 0 },
    createdAt: 0,
    updatedAt: 0,
    dueAt: 0,
    attempts: 0,
    expiresAt: 0,
    ...rest,
  };
}

/** A pending follow-up about booking a room, due a second before `now`: what the real-server commitment tests seed. */
export function dueRoomCommitment(id: string, session: string, now: number): Commitment {
  return commitmentRecord({
    id,
    session,
    kind: "open_loop",
    source: "api",
    reason: "Asked which room to book.",
    suggestedText: "Which room should I book?",
    dedupeKey: "room",
    confidence: 0.9,
    dueWindow: { earliestAt: now - 1000, latestAt: now + 3_600_000 },
    createdAt: now - 1000,
    updatedAt: now - 1000,
    status: "pending",
    dueAt: now - 1000,
    attempts: 0,
    expiresAt: now + 7_200_000,
  });
}
