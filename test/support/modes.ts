import { expect } from "vitest";
import { parseScenario } from "../../src/scenario/load.js";
import { runScenario, type ScenarioResult } from "../../src/scenario/runner.js";
import type { Scenario } from "../../src/scenario/schema.js";

// Inbound message policy (docs/architecture.md) end to end: every queue mode while the session is idle, while
// the model streams, while a tool runs, while the final is drafted and during a collect window; FIFO,
// cap and drop, duplicates, control commands, mode resolution and the acks. Every scenario also checks
// the ack contract: one readable ack per inbound message, and none claims that work stopped unless it did.
//
// Helpers of the queue-mode scenario tests (modes.*.scenario.test.ts): scenarios written as YAML,
// played through the scenario runner with the ack contract checked on every one.

/**
 * Strips the common indentation, so scenarios read as YAML in the test; a multi-line value keeps the
 * indentation of the line it is put in.
 */
export function yaml(strings: TemplateStringsArray, ...values: unknown[]): string {
  let text = strings[0] ?? "";
  values.forEach((value, index) => {
    const column = text.length - text.lastIndexOf("\n") - 1;
    text +=
      String(value)
        .split("\n")
        .join(`\n${" ".repeat(column)}`) + (strings[index + 1] ?? "");
  });
  const lines = text.replace(/^\n/, "").split("\n");
  const indent = Math.min(...lines.filter((line) => line.trim()).map((line) => line.match(/^ */)![0].length));
  return lines.map((line) => line.slice(indent)).join("\n");
}

// m1 "deploy …" at 0: model call 1 streams 0–100, deploy (not cancellable) runs 100–3100, notify
// 3100–3200, call 2 drafts 3200–3500, the reply is delivered at 3500. "search …" runs the cancellable
// search instead; "audit …" runs notify first (an effect that completes), then deploy.
export const TOOLS = yaml`
  model:
    - when: { latestUser: "deploy", call: 1 }
      reply: { delayMs: 100, toolCalls: [{ name: deploy }, { name: notify }] }
    - when: { latestUser: "search", call: 1 }
      reply: { delayMs: 100, toolCalls: [{ name: search }, { name: notify }] }
    - when: { latestUser: "audit", call: 1 }
      reply: { delayMs: 100, toolCalls: [{ name: notify }, { name: deploy }] }
    - reply: { delayMs: 300, text: "Re: {{latestUser}}" }
  tools:
    deploy: { durationMs: 3000, result: "deployed", cancellable: false }
    search: { durationMs: 3000, result: "found", cancellable: true }
    notify: { durationMs: 100, result: "notified", cancellable: false }
`;

/** A scenario on the shared model and tools; `body` holds config and inbound. */
export function withTools(body: string): string {
  return `${TOOLS}\n${body}`;
}

/** Plays `lines` (see msg) on the shared model and tools, with the queue configured in `mode`. */
export function playInMode(mode: string, ...lines: string[]): Promise<Played> {
  return play(
    withTools(
      yaml`
        config: { queue: { mode: ${mode} } }
        ${inbound(...lines)}
      `,
    ),
  );
}

export interface Played {
  result: ScenarioResult;
  scenario: Scenario;
  gateway: Awaited<ReturnType<typeof runScenario>>["gateway"];
}

export async function play(text: string): Promise<Played> {
  const scenario = parseScenario(text, "modes.yaml");
  const { result, gateway } = await runScenario(scenario);
  expectHonestAcks(scenario, result);
  return { result, scenario, gateway };
}

/** One readable ack per inbound message; an ack that says work stops only where a turn was aborted. */
export function expectHonestAcks(scenario: Scenario, result: ScenarioResult): void {
  const sent = scenario.inbound.map((message) => `${message.session}/${message.id}`).sort();
  const acked = result.acks.map((ack) => `${ack.session}/${ack.messageId}`).sort();
  expect(acked, "one ack per inbound message").toEqual(sent);
  for (const ack of result.acks) {
    expect(ack.text.trim().length, `ack of ${ack.messageId} has text`).toBeGreaterThan(5);
    expect(ack.text, `ack of ${ack.messageId} is prose`).not.toMatch(/undefined|\[object|NaN/);
    if (/^Stopping the current reply/.test(ack.text)) {
      const aborted = result.events.some(
        (event) =>
          event.type === "turn.ended" &&
          event.session === ack.session &&
          event.status === "aborted" &&
          event.at >= ack.at,
      );
      expect(aborted, `ack of ${ack.messageId} says the reply stops: "${ack.text}"`).toBe(true);
    }
    const cancelling = /cancelling (\w+)/.exec(ack.text)?.[1];
    if (cancelling) {
      expect(
        result.toolCalls.some((call) => call.name === cancelling && call.status === "cancelled"),
        `ack of ${ack.messageId} says ${cancelling} is cancelled`,
      ).toBe(true);
    }
  }
}

export function ack(result: ScenarioResult, id: string, session?: string) {
  const found = result.acks.find(
    (entry) => entry.messageId === id && (!session || entry.session === session),
  );
  if (!found) throw new Error(`no ack for ${id}`);
  return found;
}

export function acksOf(result: ScenarioResult, id: string) {
  return result.acks.filter((entry) => entry.messageId === id);
}

/** Each turn (run) in start order with the user texts its last model call saw. */
export function turns(
  result: ScenarioResult,
  session?: string,
): Array<{ runId: string; userTexts: string[]; at: number }> {
  const byRun = new Map<string, { runId: string; userTexts: string[]; at: number }>();
  for (const call of result.modelCalls) {
    if (session && call.session !== session) continue;
    const turn = byRun.get(call.runId) ?? { runId: call.runId, userTexts: [], at: call.at };
    turn.userTexts = call.userTexts;
    byRun.set(call.runId, turn);
  }
  return [...byRun.values()];
}

export function userTextsByTurn(result: ScenarioResult, session?: string): string[][] {
  return turns(result, session).map((turn) => turn.userTexts);
}

export function inbound(...lines: string[]): string {
  return `inbound:\n${lines.map((line) => `  - ${line}`).join("\n")}`;
}

export function msg(
  at: number,
  id: string,
  text: string,
  extra = "",
  session = "s",
  channel = "telegram",
): string {
  return `{ at: ${at}, session: "${session}", channel: ${channel}, id: ${id}, text: "${text}"${extra ? `, ${extra}` : ""} }`;
}
