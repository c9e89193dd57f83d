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
