import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";

// Random arrival schedules across queue modes (docs/architecture.md; invariants 1 and 5): 1–3 sessions, a random
// mode per message (or the configured one), random arrival times, tools with durations, some of them
// cancellable, a small cap with a random drop policy, redeliveries and the odd /stop or /new. Whatever
// the schedule: every accepted message is shown to the model in exactly one turn, follow-ups keep their
// order, a session's model calls only ever see its own messages, and a session runs one turn at a time.

const SESSIONS = ["a", "b", "c"] as const;
const MODES = ["steer", "followup", "collect", "interrupt", undefined] as const;
const TOOLS = ["none", "slow", "quick"] as const;

interface Arrival {
  at: number;
  session: number;
  mode: (typeof MODES)[number];
  tool: (typeof TOOLS)[number];
  channel: "telegram" | "web";
  /** Redeliver an earlier message instead (index into the schedule), or send a control command. */
  special: { kind: "none" } | { kind: "redeliver"; of: number } | { kind: "control"; text: "/stop" | "/new" };
}

interface Schedule {
  sessions: number;
  globalMode: (typeof MODES)[number];
  cap: number;
  drop: "old" | "new" | "summarize";
  debounceMs: number;
  maxPasses: number;
  callDelay: number;
  draftDelay: number;
  slow: { durationMs: number; cancellable: boolean };
  quick: { durationMs: number; cancellable: boolean };
  arrivals: Arrival[];
}

const arrivalArb: fc.Arbitrary<Arrival> = fc.record({
  at: fc.integer({ min: 0, max: 5000 }),
  session: fc.nat(2),
  mode: fc.constantFrom(...MODES),
  tool: fc.constantFrom(...TOOLS),
  channel: fc.constantFrom("telegram" as const, "web" as const),
  special: fc.oneof(
    { weight: 16, arbitrary: fc.constant({ kind: "none" as const }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("redeliver" as const), of: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("control" as const),
        text: fc.constantFrom("/stop" as const, "/new" as const),
      }),
    },
  ),
});

const toolArb = fc.record({ durationMs: fc.integer({ min: 10, max: 2500 }), cancellable: fc.boolean() });

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  sessions: fc.integer({ min: 1, max: 3 }),
  globalMode: fc.constantFrom(...MODES),
  cap: fc.integer({ min: 2, max: 20 }),
  drop: fc.constantFrom("old" as const, "new" as const, "summarize" as const),
  debounceMs: fc.integer({ min: 50, max: 800 }),
  maxPasses: fc.integer({ min: 0, max: 1 }),
  callDelay: fc.integer({ min: 10, max: 400 }),
  draftDelay: fc.integer({ min: 10, max: 600 }),
  slow: toolArb,
  quick: toolArb,
  arrivals: fc.array(arrivalArb, { minLength: 1, maxLength: 14 }),
});

interface Sent {
  session: string;
  id: string;
  text: string;
  mode?: string;
  control: boolean;
}

function toScenario(schedule: Schedule): { yaml: string; sent: Sent[] } {
  const sent: Sent[] = [];
  const inbound = schedule.arrivals.map((arrival, index) => {
    const session = SESSIONS[arrival.session % schedule.sessions]!;
    let message: Sent;
    const earlier =
      arrival.special.kind === "redeliver" && index > 0 ? sent[arrival.special.of % index] : undefined;
    if (earlier && !earlier.control) message = { ...earlier };
    else if (arrival.special.kind === "control") {
      message = { session, id: `x${index}`, text: arrival.special.text, control: true };
    } else {
      const use = arrival.tool === "none" ? "" : ` use ${arrival.tool}`;
      message = { session, id: `m${index}`, text: `${session}-m${index}${use}`, control: false };
      if (arrival.mode) message.mode = arrival.mode;
    }
    sent.push(message);
    return {
      at: arrival.at,
      session: message.session,
      channel: arrival.channel,
      id: message.id,
      text: message.text,
      ...(message.mode ? { mode: message.mode } : {}),
    };
  });
  const scenario = {
    name: "random schedule",
    config: {
      queue: {
        ...(schedule.globalMode ? { mode: schedule.globalMode } : {}),
        cap: schedule.cap,
        drop: schedule.drop,
        debounceMs: schedule.debounceMs,
      },
      staleReplyRecheck: { enabled: true, maxPasses: schedule.maxPasses },
    },
    model: [
      {
        when: { latestUser: "use slow", call: 1 },
        reply: { delayMs: schedule.callDelay, toolCalls: [{ name: "slow" }, { name: "quick" }] },
      },
      {
        when: { latestUser: "use quick", call: 1 },
        reply: { delayMs: schedule.callDelay, toolCalls: [{ name: "quick" }] },
      },
      { reply: { delayMs: schedule.draftDelay, text: "ok: {{latestUser}}" } },
    ],
    tools: {
      slow: { ...schedule.slow, result: "slow done" },
      quick: { ...schedule.quick, result: "quick done" },
    },
    inbound,
  };
  return { yaml: stringify(scenario), sent };
}

/** Run ids, in start order, whose model calls showed this text as a user message. */
function runsShowing(result: ScenarioResult, session: string, text: string): string[] {
  const runs: string[] = [];
  for (const call of result.modelCalls) {
    if (call.session === session && call.userTexts.includes(text) && !runs.includes(call.runId))
      runs.push(call.runId);
  }
  return runs;
}

async function check(schedule: Schedule): Promise<void> {
  const { yaml, sent } = toScenario(schedule);
  const { result } = await runScenario(parseScenario(yaml, "random.yaml"));
  const where = `\n${yaml}`;
  const key = (session: string, id: string) => `${session}/${id}`;

  // One ack per inbound message, in arrival order per (session, id): the first that was not rejected
  // decides, later ones are duplicates. A rejected message (a full queue) may be sent again and is
  // then decided afresh.
  expect(result.acks.length, `acks${where}`).toBe(sent.length);
  const firstAck = new Map<string, ScenarioResult["acks"][number]>();
  for (const entry of result.acks) {
    const id = key(entry.session, entry.messageId);
    const earlier = firstAck.get(id);
    if (earlier && earlier.disposition !== "rejected")
      expect(entry.disposition, `redelivery of ${id}${where}`).toBe("duplicate");
    else firstAck.set(id, entry);
  }
  const dropped = new Set(
    result.events
      .filter((event) => event.type === "message.dropped")
      .map((event) => key(String(event.session), String(event.messageId))),
  );

  // Invariant 5: every accepted message is shown to the model in exactly one turn; a dropped one in at
  // most one (it may have been seen before /new cleared its turn); a rejected one or a control never.
  const unique = new Map(sent.map((message) => [key(message.session, message.id), message]));
  for (const [id, message] of unique) {
    const decision = firstAck.get(id)?.disposition;
    const runs = runsShowing(result, message.session, message.text);
    if (message.control || decision === "rejected")
      expect(runs, `${id} (${decision}) reached the model${where}`).toEqual([]);
    else if (dropped.has(id)) expect(runs.length, `dropped ${id} ran twice${where}`).toBeLessThanOrEqual(1);
    else expect(runs, `${id} (${decision}) must run exactly once${where}`).toHaveLength(1);
  }

  // Sessions are isolated: a model call only sees user texts of its own session.
  const textsOf = new Map<string, Set<string>>();
  for (const message of sent) {
    const texts = textsOf.get(message.session) ?? new Set();
    texts.add(message.text);
    textsOf.set(message.session, texts);
  }
  for (const call of result.modelCalls) {
    for (const text of call.userTexts) {
      expect(textsOf.get(call.session)?.has(text), `${call.runId} saw "${text}"${where}`).toBe(true);
    }
  }

  // Follow-ups keep their order within a session: the turn (and position) that first shows them follows
  // their arrival.
  for (const session of SESSIONS) {
    const runOrder: string[] = [];
    for (const call of result.modelCalls)
      if (call.session === session && !runOrder.includes(call.runId)) runOrder.push(call.runId);
    const firstSeen = (text: string): number => {
      for (const call of result.modelCalls) {
        if (call.session !== session) continue;
        const position = call.userTexts.indexOf(text);
        if (position >= 0) return runOrder.indexOf(call.runId) * 1000 + position;
      }
      return Number.NaN;
    };
    const followups = [...firstAck.values()]
      .filter((entry) => entry.session === session && entry.mode === "followup")
      .filter((entry) => !["rejected", "duplicate"].includes(entry.disposition))
      .filter((entry) => !dropped.has(key(entry.session, entry.messageId)))
      .map((entry) => unique.get(key(entry.session, entry.messageId))!)
      .filter((message) => !message.control);
    const seen = followups.map((message) => firstSeen(message.text));
    expect(
      seen,
      `follow-up order in ${session}: ${followups.map((message) => message.id).join(", ")}${where}`,
    ).toEqual([...seen].sort((x, y) => x - y));
  }

  // Invariant 1: a session runs one turn at a time.
  const active = new Map<string, number>();
  for (const event of result.events) {
    if (event.type !== "turn.started" && event.type !== "turn.ended") continue;
    const session = String(event.session);
    const count = (active.get(session) ?? 0) + (event.type === "turn.started" ? 1 : -1);
    expect(count, `turns at once in ${session} at ${event.at}${where}`).toBeLessThanOrEqual(1);
    active.set(session, count);
  }
}

describe("queue modes under random schedules", () => {
  it("lose no message, run none twice, keep follow-up order and keep sessions apart", async () => {
    await fc.assert(fc.asyncProperty(scheduleArb, check), { numRuns: 100 });
  }, 120_000);
});
