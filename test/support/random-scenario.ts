import type { ScenarioResult } from "../../src/scenario/runner.js";
import { mulberry32 } from "./random.js";

/**
 * Random scenarios over every queue mode, the controls, tool outcomes (done, failed, cancelled, slow),
 * channel faults, model failures and restarts, and the invariants a user can check from the outside:
 * every acknowledged message is answered exactly once (or its ack and events say why not), no reply is
 * delivered twice, no marker or recovery is duplicated, and every transcript reads in seq order.
 */
export function randomScenario(seed: number): string {
  const random = mulberry32(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const int = (max: number) => Math.floor(random() * max);
  const mode = pick(["steer", "followup", "collect", "interrupt"]);
  const visible = random() < 0.8 ? "auto" : "message_tool";
  const sessions = Array.from({ length: 1 + int(3) }, (_, index) => `web:${seed}-${index}`);
  const lines: string[] = [];
  const times = new Set<number>();
  let n = 0;
  for (const session of sessions) {
    let at = int(200);
    for (let i = 0; i < 2 + int(6); i++) {
      n++;
      const id = `m${n}`;
      const roll = random();
      let text = `q${n} ${pick(["plain question", "please use the tool", "search for it", "this one fails"])}`;
      if (roll < 0.06) text = "/stop";
      else if (roll < 0.1) text = "/new";
      else if (roll < 0.14) text = `/queue ${pick(["steer", "followup", "collect", "interrupt"])}`;
      const inline = random() < 0.15 ? `, mode: ${pick(["steer", "followup", "collect", "interrupt"])}` : "";
      lines.push(
        `  - { at: ${at}, session: "${session}", channel: web, id: ${id}, text: "${text}"${inline} }`,
      );
      times.add(at);
      // A channel redelivers some messages later (same id, same text).
      if (random() < 0.15) {
        const later = at + 50 + int(3000);
        lines.push(`  - { at: ${later}, session: "${session}", channel: web, id: ${id}, text: "${text}" }`);
        times.add(later);
      }
      at += int(1500);
    }
  }
  const restarts: number[] = [];
  for (let i = int(3); i > 0; i--) {
    let at = 100 + int(6000);
    while (times.has(at)) at++;
    restarts.push(at);
  }
  const toolMs = pick([0, 300, 1500, 4000]);
  return `
name: random ${seed}
config:
  queue: { mode: ${mode}, debounceMs: ${pick([100, 500])}, cap: ${pick([3, 20])} }
  delivery: { visibleReplies: ${visible} }
  ${random() < 0.3 ? `laneTimeoutMs: ${pick([2000, 5000])}` : ""}
model:
  - when: { latestUser: "fails" }
    reply: { delayMs: 100, error: "the model is down" }
  - when: { latestUser: "use the tool", call: 1 }
    reply: { delayMs: 150, toolCalls: [{ name: write_file, args: { path: a.md } }] }
  - when: { latestUser: "search", call: 1 }
    reply: { delayMs: 150, toolCalls: [{ name: search, args: { q: x } }] }
  - reply: { delayMs: ${pick([50, 200, 600])}, text: "Re: {{latestUser}}" }
tools:
  write_file: { durationMs: ${toolMs}, result: written, cancellable: false${random() < 0.2 ? ", error: disk full" : ""} }
  search: { durationMs: ${pick([100, 2000])}, result: found, cancellable: true }
channels:
  web: { failSends: ${pick([0, 0, 1, 2, 3])}, omitMessageId: ${random() < 0.08} }
inbound:
${lines.join("\n")}
restart: [${restarts.map((at) => `{ at: ${at} }`).join(", ")}]
`;
}

const ACCEPTED = new Set(["started", "steered", "queued", "collected", "interrupted"]);

/** Every invariant violated by a scenario's result, in words (empty when it held). */
export function violations(result: ScenarioResult): string[] {
  const problems: string[] = [];
  const dropped = new Set(
    result.events.flatMap((event) =>
      event.type === "message.dropped" ? [`${event.session}/${String(event.messageId)}`] : [],
    ),
  );
  const seen = new Set<string>();
  for (const call of result.modelCalls)
    for (const text of call.userTexts) seen.add(`${call.session}/${text}`);

  // Acks: one first ack per id; a duplicate only for an id accepted before; accepted ones stored once.
  const firstAck = new Map<string, string>();
  for (const ack of result.acks) {
    const key = `${ack.session}/${ack.messageId}`;
    if (!firstAck.has(key)) {
      firstAck.set(key, ack.disposition);
      continue;
    }
    if (ack.disposition !== "duplicate" && ack.disposition !== "control" && ack.disposition !== "rejected")
      if (ACCEPTED.has(firstAck.get(key)!))
        problems.push(`${key} acked ${ack.disposition} after it was accepted`);
  }
  for (const [key, disposition] of firstAck) {
    if (!ACCEPTED.has(disposition)) continue;
    const [session, id] = key.split("/") as [string, string];
    const stored = (result.transcripts[session] ?? []).filter(
      (record) => record.role === "user" && record.messageId === id,
    );
    if (dropped.has(key)) continue;
    if (stored.length !== 1) {
      problems.push(`${key} (${disposition}) is stored ${stored.length} times`);
      continue;
    }
    const text = (stored[0] as { text?: string }).text;
    if (!seen.has(`${session}/${String(text)}`))
      problems.push(`${key} (${disposition}) never reached the model`);
  }

  // No reply delivered twice: one reply text answers one newest message, once.
  const delivered = new Map<string, number>();
  const byId = new Map<string, number>();
  for (const delivery of result.deliveries) {
    if (delivery.kind === "reply" || delivery.kind === "recovery") {
      const key = `${delivery.session}/${delivery.text}`;
      delivered.set(key, (delivered.get(key) ?? 0) + 1);
    }
    if (delivery.deliveryId) byId.set(delivery.deliveryId, (byId.get(delivery.deliveryId) ?? 0) + 1);
  }
  for (const [key, count] of delivered) if (count > 1) problems.push(`${key} delivered ${count} times`);
  for (const [id, count] of byId) if (count > 1) problems.push(`deliveryId ${id} delivered ${count} times`);

  // Markers and recoveries: at most one per final; seq strictly increasing.
  for (const [session, records] of Object.entries(result.transcripts)) {
    const marked = new Map<number, number>();
    const recovered = new Map<string, number>();
    let last = 0;
    for (const record of records) {
      if ((record.seq ?? 0) <= last) problems.push(`${session}: seq ${record.seq} after ${last}`);
      last = record.seq ?? last;
      if (record.role !== "custom") continue;
      if (record.customType === "tiller.undelivered-final") {
        const seq = Number(record.details?.finalSeq);
        marked.set(seq, (marked.get(seq) ?? 0) + 1);
      }
      if (record.customType === "tiller.recovered") {
        const run = String(record.details?.strandedRunId);
        recovered.set(run, (recovered.get(run) ?? 0) + 1);
      }
    }
    for (const [seq, count] of marked)
      if (count > 1) problems.push(`${session}: final ${seq} marked ${count} times`);
    for (const [run, count] of recovered)
      if (count > 1) problems.push(`${session}: ${run} recovered ${count} times`);
  }
  for (const event of result.events)
    if (event.type === "session.crashed") problems.push(`session crashed: ${String(event.error)}`);
  return problems;
}
