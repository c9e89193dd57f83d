import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LoopbackChannel } from "../../src/adapters/channels/loopback-channel.js";
import { MemoryStore } from "../../src/adapters/memory-store.js";
import { SimulatedClock } from "../../src/adapters/simulated-clock.js";
import type { TillerEvent } from "../../src/events.js";
import { createGateway } from "../../src/gateway/create-gateway.js";
import { silentLogger } from "../../src/logger.js";
import type { Commitment } from "../../src/machines/commitment.types.js";
import { normalizeText, settledByTranscript } from "../../src/policy/commitment-review.js";
import type { ModelReply } from "../../src/ports/model.js";
import type { RecordBody, StoredCommitment } from "../../src/ports/store.js";

// fast-check over random conversations after a commitment's source message and random review answers:
// a check-in is only ever sent after a still-pending model review of that commitment, with that review's
// own text (never the stored suggestion), at most once, and never when the transcript settles it.

const HOUR = 3_600_000;
const SUGGESTED = "Which slot should I book?";

const entry: fc.Arbitrary<Entry> = fc.oneof(
  fc.record({
    role: fc.constant("user" as const),
    text: fc.constantFrom("Friday works.", "Actually, remove Friday.", "thanks", "?"),
  }),
  fc.record({
    role: fc.constant("assistant" as const),
    text: fc.constantFrom("Booked.", "On it."),
    delivered: fc.boolean(),
  }),
);

const reply: fc.Arbitrary<ModelReply | "error"> = fc.oneof(
  fc.constant<"error">("error"),
  fc.constant<ModelReply>({ text: "no idea", toolCalls: [] }),
  fc
    .record({
      classification: fc.constantFrom(
        "still_pending_user",
        "still_pending_agent",
        "completed",
        "superseded",
        "unclear",
        "bogus",
      ),
      text: fc.constantFrom(
        "",
        SUGGESTED,
        " which SLOT should i book? ",
        "Friday is still open: book it?",
        "Still working on it.",
      ),
    })
    .map((args) => ({ text: "", toolCalls: [{ callId: "d", name: "commitment_decision", args }] })),
);

type Entry = { role: "user"; text: string } | { role: "assistant"; text: string; delivered: boolean };

async function simulate(after: Entry[], answers: Array<ModelReply | "error">) {
  const clock = new SimulatedClock();
  const store = new MemoryStore({ now: () => clock.now() });
  const session = "web:1";
  const head = await store.open(session);
  const records: RecordBody[] = [
    { role: "user", text: "Please book a room.", messageId: "src" },
    { role: "assistant", text: "Thursday or Friday?", runId: "r0", delivered: true },
    ...after.map(
      (item, index): RecordBody =>
        item.role === "user"
          ? { role: "user", text: item.text, messageId: `u${index}` }
          : { role: "assistant", text: item.text, runId: `r${index + 1}`, delivered: item.delivered },
    ),
  ];
  await store.append(session, records, head);
  const commitment: Commitment = {
    id: "c1",
    session,
    kind: "open_loop",
    source: "tool",
    reason: "asked which slot",
    suggestedText: SUGGESTED,
    dedupeKey: "slot",
    confidence: 0.9,
    dueWindow: { earliestAt: HOUR, latestAt: 3 * HOUR },
    sourceMessageId: "src",
    sourceRunId: "r0",
    createdAt: 0,
    updatedAt: 0,
    status: "pending",
    dueAt: HOUR,
    attempts: 0,
    expiresAt: 4 * HOUR,
  };
  await store.saveCommitments([commitment as unknown as StoredCommitment]);
  let call = 0;
  const channel = new LoopbackChannel({ now: () => clock.now() });
  const gateway = createGateway({
    model: {
      async complete() {
        const answer = answers[call++ % answers.length]!;
        if (answer === "error") throw new Error("model down");
        return answer;
      },
    },
    channels: { web: channel },
    clock,
    store,
    logger: silentLogger,
    config: { commitments: { enabled: true, maxPerDay: 3 }, heartbeat: { everyMs: HOUR } },
  });
  const events: TillerEvent[] = [];
  gateway.subscribe((event) => events.push(event));
  await gateway.start();
  await clock.runUntilIdle({ isBusy: () => gateway.isBusy, until: 100 * HOUR });
  const settled = settledByTranscript(await store.read(session), commitment).settled;
  await gateway.stop();
  return {
    events,
    sent: channel.sent.filter((sent) => sent.kind === "commitment" && sent.ok),
    settled,
    calls: call,
  };
}

describe("commitment review property", () => {
  it("sends only after a still-pending model review, its own text, at most once, never when the transcript settles it", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { maxLength: 6 }),
        fc.array(reply, { minLength: 1, maxLength: 4 }),
        async (after, answers) => {
          const { events, sent, settled, calls } = await simulate(after, answers);
          expect(sent.length).toBeLessThanOrEqual(1);
          if (settled) {
            expect(calls).toBe(0);
            expect(sent).toEqual([]);
          }
          const commitmentEvents = events.filter((event) => event.type.startsWith("commitment."));
          for (const delivery of sent) {
            const sentAt = commitmentEvents.findIndex((event) => event.type === "commitment.sent");
            const review = commitmentEvents
              .slice(0, sentAt)
              .findLast((event) => event.type === "commitment.reviewed");
            expect(review).toMatchObject({ via: "model", voided: false });
            expect(["still_pending_user", "still_pending_agent"]).toContain(review!.classification);
            expect(normalizeText(delivery.text)).not.toBe(normalizeText(SUGGESTED));
            expect(delivery.text.trim()).not.toBe("");
            expect(commitmentEvents[sentAt]).toMatchObject({ text: delivery.text });
          }
          const final = commitmentEvents.at(-1)!.type;
          expect(["commitment.sent", "commitment.dismissed", "commitment.expired"]).toContain(final);
        },
      ),
      { numRuns: 60 },
    );
  });
});
