import { describe, expect, it } from "vitest";
import { type CheckedResult, checkExpectations } from "../../src/scenario/check-expectations.js";
import { parseScenario, ScenarioError } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

const RESULT: CheckedResult = {
  acks: [
    { session: "s", messageId: "m1", disposition: "started" },
    { session: "s", messageId: "m2", disposition: "steered" },
  ],
  deliveries: [
    { session: "s", kind: "reply", text: "Re: first" },
    { session: "s", kind: "notice", text: "I could not finish this reply." },
  ],
  events: [
    { type: "recheck.fired", reason: "newer-message" },
    { type: "recheck.skipped", reason: "limit" },
  ],
  states: {
    s: { session: ["idle", "turn.running", "idle"], runs: [{ runId: "s#1", values: ["streaming", "done"] }] },
  },
};

describe("checkExpectations", () => {
  it("passes what the run showed, in order, and says what it found", () => {
    const checks = checkExpectations(
      {
        states: [
          { machine: "run", turn: 1, values: ["streaming", "done"] },
          { machine: "session", turn: 1, values: ["turn.running", "idle"] },
        ],
        acks: [{ messageId: "m2", disposition: "steered" }],
        deliveries: [
          { kind: "reply", text: "Re: first" },
          { kind: "notice", textMatches: "could not" },
        ],
        deliveryCount: { count: 1, kind: "reply" },
        events: [{ type: "recheck.fired", reason: "newer-message" }, { type: "recheck.skipped" }],
        noEvents: ["commitment.sent"],
      },
      RESULT,
    );
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(checks[0]).toEqual({
      ok: true,
      what: "run of turn 1 in s passes streaming → done",
      found: "streaming → done",
    });
  });

  it("fails each kind with what was found instead", () => {
    const checks = checkExpectations(
      {
        states: [
          { machine: "run", turn: 1, values: ["done", "streaming"] },
          { machine: "run", turn: 2, values: ["done"] },
        ],
        acks: [
          { messageId: "m2", disposition: "queued" },
          { messageId: "m7", disposition: "started" },
        ],
        deliveries: [{ kind: "notice" }, { kind: "reply", text: "Re: first" }],
        deliveryCount: { count: 0, kind: "reply" },
        events: [{ type: "recheck.skipped", reason: "disabled" }],
        noEvents: ["recheck.fired"],
      },
      RESULT,
    );
    expect(checks.map((check) => [check.ok, check.found])).toEqual([
      [false, "streaming → done (missing streaming in order)"],
      [false, "no such run"],
      [false, "steered"],
      [false, "no ack"],
      [true, "delivered at position 2"],
      [false, 'reply "Re: first", notice "I could not finish this reply."'],
      [false, "1"],
      [false, "emitted only as recheck.skipped (reason limit), or not in order"],
      [false, "1 emitted"],
    ]);
  });

  it("is checked by the scenario runner, which reports each expectation", async () => {
    const scenario = parseScenario(
      [
        "model: [{ reply: { delayMs: 100, text: 'Re: {{latestUser}}' } }]",
        "inbound: [{ at: 0, session: s, channel: web, id: m1, text: hello }]",
        "expect:",
        "  states: [{ machine: run, values: [streaming, done] }]",
        "  acks: [{ messageId: m1, disposition: started }]",
        "  deliveries: [{ kind: reply, textMatches: '^re: hel' }]",
        "  noEvents: [recheck.fired]",
      ].join("\n"),
    );
    const { result } = await runScenario(scenario);
    expect(result.expectations?.map((check) => check.ok)).toEqual([true, true, true, true]);
    expect(result.states.s?.runs[0]?.values).toEqual(["streaming", "done"]);
  });

  it("refuses an unsafe or invalid textMatches when the scenario loads, naming the field", () => {
    const load = (pattern: string) =>
      parseScenario(
        `inbound: []\nexpect: { deliveries: [{ textMatches: ${JSON.stringify(pattern)} }] }`,
        "x.yaml",
      );
    expect(() => load("(a+)+$")).toThrow(ScenarioError);
    expect(() => load("(a+)+$")).toThrow(/expect\.deliveries\[0\]\.textMatches/);
    expect(() => load("([")).toThrow(/expect\.deliveries\[0\]\.textMatches/);
    expect(() => parseScenario("expect: { acks: [{ messageId: m1 }] }", "x.yaml")).toThrow(
      /expect\.acks\[0\]\.disposition/,
    );
  });
});
