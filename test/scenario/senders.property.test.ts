import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { TillerEvent } from "../../src/events.js";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario } from "../../src/scenario/runner.js";

// Random group conversations in one session: three people with different scopes and the anonymous
// user write in random queue modes at random times, asking for tools that need `admin`, `member` or
// nothing. Whatever the schedule: no tool runs unless every sender of its turn (steering already
// waiting included) holds its scopes, a refusal happens only when one of them lacks one, and no model
// call mixes senders unless steering across senders is on.

const PEOPLE = {
  alice: { id: "alice", name: "Alice", authority: ["member", "admin"] },
  bob: { id: "bob", name: "Bob", authority: ["member"] },
  carol: { id: "carol", name: "Carol" },
} as const;
const WHO = ["alice", "bob", "carol", "anonymous"] as const;
const TOOLS = { guarded: ["admin"], members: ["member"], plain: [] } as Record<string, string[]>;
const MODES = ["steer", "followup", "collect", "interrupt"] as const;

interface Arrival {
  at: number;
  who: (typeof WHO)[number];
  mode: (typeof MODES)[number];
  tool: keyof typeof TOOLS | "none";
}

const arrivalArb: fc.Arbitrary<Arrival> = fc.record({
  at: fc.integer({ min: 0, max: 4000 }),
  who: fc.constantFrom(...WHO),
  mode: fc.constantFrom(...MODES),
  tool: fc.constantFrom("guarded", "members", "plain", "none"),
});

const conversationArb = fc.record({
  across: fc.boolean(),
  toolMs: fc.integer({ min: 10, max: 1500 }),
  arrivals: fc.array(arrivalArb, { minLength: 1, maxLength: 10 }),
});

function scenarioOf(conversation: Conversation): string {
  const { across, toolMs, arrivals } = conversation;
  return stringify({
    name: "random group conversation",
    config: { queue: { steerAcrossSenders: across, debounceMs: 100 } },
    tools: Object.fromEntries(
      Object.entries(TOOLS).map(([name, requires]) => [name, { durationMs: toolMs, requires }]),
    ),
    model: [
      ...Object.keys(TOOLS).map((name) => ({
        when: { latestUser: `use:${name}`, call: 1 },
        reply: { delayMs: 50, toolCalls: [{ name }] },
      })),
      { reply: { delayMs: 50, text: "ok" } },
    ],
    inbound: arrivals.map((arrival, index) => ({
      at: arrival.at,
      session: "group:1",
      channel: "slack",
      id: `m${index}`,
      mode: arrival.mode,
      text: `message ${index} use:${arrival.tool}`,
      ...(arrival.who === "anonymous" ? {} : { sender: PEOPLE[arrival.who] }),
    })),
  });
}

type Conversation = { across: boolean; toolMs: number; arrivals: Arrival[] };

function authorityOf(sender: string | null): Set<string> {
  const person = sender ? PEOPLE[sender as keyof typeof PEOPLE] : undefined;
  return new Set(person && "authority" in person ? person.authority : []);
}

/** The senders whose messages a run owned by `until`: seen by its model calls or acked into it. */
function runSenders(
  events: TillerEvent[],
  runId: string,
  until: number,
  senderOf: Map<string, string | null>,
) {
  const out = new Set<string | null>();
  for (const event of events) {
    if (event.at > until || event.runId !== runId) continue;
    if (event.type === "model.called") for (const s of event.senders ?? []) out.add(s);
    if (event.type === "message.acked" || event.type === "turn.started") {
      const ids = "messageIds" in event ? event.messageIds : [event.messageId];
      for (const id of ids) if (senderOf.has(id)) out.add(senderOf.get(id)!);
    }
  }
  return out;
}

describe("random group conversations", () => {
  it("never run a tool without its scopes and never mix senders in a model call unless allowed", async () => {
    await fc.assert(
      fc.asyncProperty(conversationArb, async (conversation) => {
        const { result } = await runScenario(parseScenario(scenarioOf(conversation), "random.yaml"));
        const senderOf = new Map(
          conversation.arrivals.map((a, index) => [`m${index}`, a.who === "anonymous" ? null : a.who]),
        );
        for (const event of result.events) {
          if (event.type !== "model.called" || conversation.across) continue;
          const senders = new Set(event.senders as Array<string | null>);
          expect(senders.size, `model call of ${event.runId} mixes senders`).toBeLessThanOrEqual(1);
        }
        for (const call of result.toolCalls) {
          if (call.status !== "done" && call.status !== "refused") continue;
          const senders = runSenders(result.events, call.runId, call.at, senderOf);
          const requires = TOOLS[call.name] ?? [];
          const covered = [...senders].every((s) => requires.every((scope) => authorityOf(s).has(scope)));
          if (call.status === "done") expect(covered, `${call.name} ran in ${call.runId}`).toBe(true);
          // Without steering across senders the turn's sender is fixed, so a refusal is never spurious.
          if (call.status === "refused" && !conversation.across)
            expect(covered, `${call.name} refused in ${call.runId}`).toBe(false);
        }
      }),
      { numRuns: 60 },
    );
  });
});
