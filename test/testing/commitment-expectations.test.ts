import { describe, expect, it } from "vitest";
import { checkExpectations } from "../../src/scenario/check-expectations.js";
import { parseScenario, ScenarioError } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

/** A scenario whose turn proposes a follow-up that the review model decides at its second review. */
const SCENARIO = `
config:
  commitments: { enabled: true }
  heartbeat: { everyMs: 60000 }
model:
  - when: { review: true, commitment: commitment-1, reviewNumber: 1 }
    reply: { delayMs: 1000, toolCalls: [{ name: commitment_decision, args: { classification: unclear } }] }
  - when: { review: true, commitment: commitment-1 }
    reply: { delayMs: 1000, toolCalls: [{ name: commitment_decision, args: { classification: still_pending_user, text: "Did the invoice arrive?" } }] }
  - when: { review: false, call: 1 }
    reply: { delayMs: 100, toolCalls: [{ name: commitment, args: { kind: open_loop, reason: "asked about the invoice", suggestedText: "Invoice?", dedupeKey: invoice, confidence: 0.9, dueWindow: { earliestMs: 60000 } } }] }
  - when: { review: false }
    reply: { delayMs: 100, text: "I will check back on the invoice." }
channels:
  web: { failSendNumbers: [2] }
inbound:
  - { at: 0, session: "web:1", channel: web, id: m1, text: "Tell me when the invoice is in" }
`;

describe("commitment expectations in scenarios", () => {
  it("records each commitment's actors, scripts reviews by number (later ones by the next rule) and fails the chosen send", async () => {
    const scenario = parseScenario(
      `${SCENARIO}
expect:
  states: [{ machine: commitment, commitment: commitment-1, values: [reviewing, waitingToRetry, reviewing, sending, waitingToRetry, sending, sent] }]
  events:
    - { type: commitment.retried, fields: { id: commitment-1, why: "send failed: the channel did not commit the send" } }
    - { type: commitment.sent, fields: { id: commitment-1, text: "Did the invoice arrive?" } }
  commitments: [{ id: commitment-1, status: sent, classification: still_pending_user }]
  deliveryCount: { count: 1, kind: commitment }
`,
      "invoice.yaml",
    );
    const { result } = await runScenario(scenario);
    expect(result.expectations!.filter((expectation) => !expectation.ok)).toEqual([]);
    // One actor per review: each starts from `scheduled`.
    expect(result.commitmentStates["commitment-1"]!.filter((value) => value === "scheduled")).toHaveLength(3);
    expect(result.deliveries.map((delivery) => delivery.kind)).toEqual(["reply", "commitment"]);
  });

  it("an operator's dismissal at a time ends the commitment, and a wrong expectation says what it found", async () => {
    const scenario = parseScenario(
      `${SCENARIO}
dismiss: [{ at: 30000, id: commitment-1 }]
expect:
  commitments: [{ id: commitment-1, status: sent }]
  events: [{ type: commitment.dismissed, fields: { id: commitment-1, why: completed } }]
  states: [{ machine: commitment, commitment: commitment-1, values: [scheduled] }]
`,
      "dismissed.yaml",
    );
    const { result } = await runScenario(scenario);
    expect(
      result.expectations!.map((expectation) => [expectation.ok, expectation.what, expectation.found]),
    ).toEqual([
      [false, "commitment commitment-1 passes scheduled", "no actor of it ran"],
      [
        false,
        "event commitment.dismissed { id: commitment-1, why: completed }",
        "emitted only as commitment.dismissed { id: commitment-1, why: operator }, or not in order",
      ],
      [false, "commitment commitment-1 ends sent", "dismissed"],
    ]);
  });

  it("a commitment's states need its id, and only a commitment's", () => {
    const bad = (states: string) => () => parseScenario(`expect: { states: [${states}] }`, "bad.yaml");
    expect(bad("{ machine: commitment, values: [sent] }")).toThrow(ScenarioError);
    expect(bad("{ machine: commitment, values: [sent] }")).toThrow(
      /expect\.states\[0\]\.commitment: .*commitment id/,
    );
    expect(bad("{ machine: run, commitment: c1, values: [done] }")).toThrow(
      /expect\.states\[0\]\.commitment/,
    );
    expect(() => parseScenario("dismiss: [{ at: -1, id: c1 }]", "bad.yaml")).toThrow(/dismiss\[0\]\.at/);
  });

  it("an unknown commitment is reported as missing", () => {
    const checks = checkExpectations(
      { commitments: [{ id: "c9", status: "sent" }] },
      { acks: [], deliveries: [], events: [], states: {}, commitments: [] },
    );
    expect(checks).toEqual([{ ok: false, what: "commitment c9 ends sent", found: "no such commitment" }]);
  });
});
