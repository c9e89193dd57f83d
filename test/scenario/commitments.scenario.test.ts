import { describe, expect, it } from "vitest";
import { checkIns, HOUR, ofType, openLoop, play, reviews, SEED } from "../support/commitment-scenarios.js";
import { useTempDir } from "../support/temp-dir.js";

// Commitments end to end through the scenario runner (docs/commitments.md, invariant 10), on the simulated
// clock, asserting on the JSON output a user of `tiller run --json` reads.

describe("commitments", () => {
  it("dismisses the seed incident's follow-up with no model call: the user corrected the list and the work is done", async () => {
    const result = await play(SEED);
    expect(result.commitments).toEqual([
      { id: "commitment-1", status: "dismissed", classification: "superseded" },
    ]);
    expect(reviews(result)).toEqual([]);
    expect(checkIns(result)).toEqual([]);
    expect(result.deliveries.map((d) => d.text)).toEqual([
      "Before I start: should the list be Acme, Globex and Initech?",
      "Done: the review covers Acme, Globex and Umbrella; Initech was excluded.",
    ]);
    const reviewed = ofType(result, "commitment.reviewed");
    expect(reviewed).toMatchObject([{ classification: "superseded", via: "transcript" }]);
    expect(ofType(result, "commitment.dismissed")).toMatchObject([{ why: "superseded", id: "commitment-1" }]);
    // Reviewed at the first tick after it fell due (3 h after creation), not before.
    expect(reviewed[0]!.at).toBe(4 * HOUR);
  });

  it("sends one follow-up composed by the review, once, not before it is due, and stores it in the transcript", async () => {
    const result = await play(openLoop({}));
    expect(reviews(result)).toHaveLength(1);
    const [call] = reviews(result);
    // Created at 500 ms and due 2 h later: the first hourly tick after that is at 3 h.
    expect(call!.at).toBe(3 * HOUR);
    expect(call!.latestUser).toBe("Please book a meeting room.");
    const sent = checkIns(result);
    expect(sent).toEqual([
      expect.objectContaining({
        kind: "commitment",
        session: "telegram:1",
        text: "Do you still want the Friday slot? I can hold it until noon.",
        runId: "commitment:commitment-1",
      }),
    ]);
    expect(sent[0]!.at).toBe(3 * HOUR + 1000);
    expect(result.commitments).toEqual([
      { id: "commitment-1", status: "sent", classification: "still_pending_user" },
    ]);
    expect(result.transcripts["telegram:1"]!.at(-1)).toMatchObject({
      role: "assistant",
      text: "Do you still want the Friday slot? I can hold it until noon.",
      delivered: true,
      runId: "commitment:commitment-1",
    });
    expect(ofType(result, "commitment.sent")).toHaveLength(1);
  });

  it("sends nothing when the review cannot tell: retried with growing gaps, then expired", async () => {
    const result = await play(
      openLoop({
        review: '{ delayMs: 1000, text: "I am not sure." }',
        dueMs: HOUR,
        latestMs: 2 * HOUR,
        extra: ", expireAfterMs: 21600000",
      }),
    );
    expect(checkIns(result)).toEqual([]);
    expect(result.commitments).toEqual([
      { id: "commitment-1", status: "expired", classification: "unclear" },
    ]);
    expect(ofType(result, "commitment.retried")).toHaveLength(3);
    // Reviews at 2 h, 4 h and 7 h: one hour of backoff, then two, then four (cut at the expiry).
    expect(reviews(result).map((call) => call.at / HOUR)).toEqual([2, 4, 7]);
    // Expired at the first tick past latest + expireAfterMs (2 h + 500 ms + 6 h).
    expect(ofType(result, "commitment.expired")).toMatchObject([{ at: 9 * HOUR }]);
  });

  it("treats a review that repeats the stored suggestion as no decision", async () => {
    const result = await play(
      openLoop({
        review: `{ toolCalls: [{ name: commitment_decision, args: { classification: still_pending_user, text: "  which SLOT should i   book? " } }] }`,
        dueMs: HOUR,
        latestMs: HOUR,
        extra: ", expireAfterMs: 3600000",
      }),
    );
    expect(checkIns(result)).toEqual([]);
    expect(ofType(result, "commitment.reviewed").every((event) => event.classification === "unclear")).toBe(
      true,
    );
  });

  it("merges the same dedupeKey of one session into one commitment with the widest window", async () => {
    const result = await play(
      openLoop({
        inbound: `  - { at: 600000, session: "telegram:1", channel: telegram, id: m2, text: "book it again please" }`,
        review: `{ toolCalls: [{ name: commitment_decision, args: { classification: completed } }] }`,
      }),
    );
    expect(ofType(result, "commitment.created")).toHaveLength(1);
    expect(ofType(result, "commitment.merged")).toMatchObject([
      { id: "commitment-1", dedupeKey: "booking:slot" },
    ]);
    expect(result.commitments).toHaveLength(1);
  });

  it("does nothing while commitments are disabled, and tells the model so", async () => {
    const result = await play(openLoop({ enabled: false }));
    expect(result.commitments).toEqual([]);
    expect(reviews(result)).toEqual([]);
    expect(checkIns(result)).toEqual([]);
    expect(ofType(result, "commitment.created")).toEqual([]);
    const toolResult = result.transcripts["telegram:1"]!.find((record) => record.role === "toolResult");
    expect(toolResult).toMatchObject({
      status: "done",
      result: { accepted: false, reason: expect.stringContaining("commitments.enabled: false") },
    });
  });

  it("voids a review when the user writes during it; the user's turn runs, and the next review decides", async () => {
    const result = await play(
      openLoop({
        review: `{ delayMs: 5000, toolCalls: [{ name: commitment_decision, args: { classification: still_pending_user, text: "Still need the room?" } }] }`,
        inbound: `  - { at: ${3 * HOUR + 2000}, session: "telegram:1", channel: telegram, id: m2, text: "Any update?" }`,
      }),
    );
    const reviewed = ofType(result, "commitment.reviewed");
    expect(reviewed[0]).toMatchObject({ voided: true });
    expect(ofType(result, "commitment.retried")[0]).toMatchObject({
      why: "a user message arrived during the review",
    });
    // The user's turn was answered right away, before any follow-up.
    const reply = result.deliveries.find((d) => d.text === "Noted: Any update?");
    expect(reply!.at).toBe(3 * HOUR + 2500);
    // The next review sees the user's message and its answer: settled by the transcript.
    expect(reviewed.at(-1)).toMatchObject({ classification: "completed", via: "transcript" });
    expect(checkIns(result)).toEqual([]);
  });

  it("holds sends within maxPerDay per session per rolling 24 h", async () => {
    const commitments = [1, 2, 3, 4].map(
      (n) =>
        `  - { id: p${n}, session: "telegram:1", kind: open_loop, reason: "r${n}", suggestedText: "s${n}", dedupeKey: "k${n}", confidence: 0.9, dueAt: ${HOUR}, dueWindow: { latestMs: ${2 * HOUR} } }`,
    );
    const result = await play(`
name: four due at once
config:
  commitments: { enabled: true, maxPerDay: 2, expireAfterMs: 3600000 }
  heartbeat: { everyMs: 3600000 }
model:
  - when: { review: true }
    reply: { toolCalls: [{ name: commitment_decision, args: { classification: still_pending_agent, text: "Still working on it: the report is half done." } }] }
channels: { telegram: {} }
commitments:
${commitments.join("\n")}
`);
    const sent = checkIns(result);
    expect(sent).toHaveLength(2);
    expect(sent.map((d) => d.at)).toEqual([HOUR, HOUR]);
    expect(ofType(result, "commitment.retried").filter((e) => e.why === "maxPerDay reached")).not.toEqual([]);
    // The two left wait for the quota; their window (and its 1 h grace) passes first.
    expect(result.commitments.map((c) => c.status).sort()).toEqual(["expired", "expired", "sent", "sent"]);
    expect(result.commitments.filter((c) => c.status === "sent").map((c) => c.classification)).toEqual([
      "still_pending_agent",
      "still_pending_agent",
    ]);
  });

  const temp = useTempDir("tiller-commitments");
  for (const store of ["memory", "jsonl"] as const) {
    it(`reviews again after a restart cut a review off, and sends once (${store} store)`, async () => {
      const yaml = openLoop({
        review: `{ delayMs: 5000, toolCalls: [{ name: commitment_decision, args: { classification: still_pending_user, text: "Still need the room?" } }] }`,
        restart: `restart:\n  - { at: ${3 * HOUR + 2000} }`,
      });
      const result = await play(yaml, store === "jsonl" ? temp.path : undefined);
      // Cut off at 3 h + 2 s; the new process's first tick (1 h after it started) reviews it again.
      expect(reviews(result).map((call) => call.at)).toEqual([3 * HOUR, 4 * HOUR + 2000]);
      expect(checkIns(result)).toEqual([
        expect.objectContaining({ text: "Still need the room?", at: 4 * HOUR + 7000 }),
      ]);
      expect(result.commitments).toEqual([
        { id: "commitment-1", status: "sent", classification: "still_pending_user" },
      ]);
    });
  }

  it("keeps a sent follow-up sent across a later restart: no second send", async () => {
    const result = await play(openLoop({ restart: `restart:\n  - { at: ${5 * HOUR} }`, until: 40 * HOUR }));
    expect(checkIns(result)).toHaveLength(1);
    expect(reviews(result)).toHaveLength(1);
    expect(result.commitments).toEqual([
      { id: "commitment-1", status: "sent", classification: "still_pending_user" },
    ]);
  });
});
