import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";

export const HOUR = 3_600_000;

export async function play(yaml: string, storeDir?: string): Promise<ScenarioResult> {
  const { result } = await runScenario(parseScenario(yaml, "x.yaml"), storeDir ? { storeDir } : {});
  return result;
}

export { eventsOf as ofType } from "./scenario.js";
export const reviews = (result: ScenarioResult) => result.modelCalls.filter((call) => call.review);
export const checkIns = (result: ScenarioResult) => result.deliveries.filter((d) => d.kind === "commitment");

/** The seed incident: the agent asks to confirm a list; a minute later the user corrects it. */
export const SEED = `
name: a corrected list and finished work settle the follow-up
config:
  commitments: { enabled: true, maxPerDay: 3 }
  heartbeat: { everyMs: 3600000 }
model:
  - when: { review: true }
    reply: { toolCalls: [{ name: commitment_decision, args: { classification: still_pending_user, text: "Should I keep Acme, Globex and Initech?" } }] }
  - when: { latestUser: "competitor review", call: 1 }
    reply:
      delayMs: 500
      toolCalls:
        - name: commitment
          args:
            kind: open_loop
            reason: "Asked the user to confirm the competitor list before the review."
            suggestedText: "Checking back on the competitor list: should I keep Acme, Globex and Initech?"
            dedupeKey: "competitor-review:confirm-list"
            confidence: 0.86
            dueWindow: { earliestMs: 10800000 }
  - when: { latestUser: "competitor review" }
    reply: { delayMs: 500, text: "Before I start: should the list be Acme, Globex and Initech?" }
  - when: { latestUser: "remove initech" }
    reply: { delayMs: 600000, text: "Done: the review covers Acme, Globex and Umbrella; Initech was excluded." }
inbound:
  - { at: 0, session: "slack:thread-1", channel: slack, id: m1, text: "Please build a competitor review." }
  - { at: 60000, session: "slack:thread-1", channel: slack, id: m2, text: "Remove Initech and add Umbrella." }
`;

/**
 * The agent asks a question and the user never answers: the commitment stays open. \`review\` is the
 * reply of the review rule, \`extra\` more config lines.
 */
export function openLoop(options: {
  review?: string;
  extra?: string;
  inbound?: string;
  restart?: string;
  channel?: string;
  until?: number;
  dueMs?: number;
  latestMs?: number;
  enabled?: boolean;
}): string {
  return `
name: an open question nobody answered
config:
  commitments: { enabled: ${options.enabled ?? true}, maxPerDay: 3${options.extra ?? ""} }
  heartbeat: { everyMs: 3600000 }
model:
  - when: { review: true }
    reply: ${options.review ?? `{ delayMs: 1000, toolCalls: [{ name: commitment_decision, args: { classification: still_pending_user, text: "Do you still want the Friday slot? I can hold it until noon." } }] }`}
  - when: { latestUser: "book", call: 1 }
    reply:
      delayMs: 500
      toolCalls:
        - name: commitment
          args:
            kind: open_loop
            reason: "Asked which slot to book."
            suggestedText: "Which slot should I book?"
            dedupeKey: "booking:slot"
            confidence: 0.9
            dueWindow: { earliestMs: ${options.dueMs ?? 7_200_000}${options.latestMs !== undefined ? `, latestMs: ${options.latestMs}` : ""} }
  - when: { latestUser: "book" }
    reply: { delayMs: 500, text: "Thursday or Friday?" }
  - reply: { delayMs: 500, text: "Noted: {{latestUser}}" }
channels:
  telegram: ${options.channel ?? "{}"}
inbound:
  - { at: 0, session: "telegram:1", channel: telegram, id: m1, text: "Please book a meeting room." }
${options.inbound ?? ""}
${options.restart ?? ""}
${options.until ? `until: ${options.until}` : ""}
`;
}
