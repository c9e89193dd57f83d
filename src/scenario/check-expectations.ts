import { checkPattern } from "../config.js";
import { ConfigError } from "../errors.js";
import type { ScenarioExpect } from "./expect-schema.js";

/** One checked expectation: `what` was expected, `found` is what the run showed. */
export interface Expectation {
  ok: boolean;
  what: string;
  found: string;
}

/** State values each session's actors passed through, consecutive repeats folded. */
export type RecordedStates = Record<
  string,
  { session: string[]; runs: Array<{ runId: string; values: string[] }> }
>;

/** What the checker reads of a scenario result. */
export interface CheckedResult {
  acks: Array<{ messageId: string; disposition: string; session: string }>;
  deliveries: Array<{ kind: string; text: string; session: string }>;
  events: Array<{ type: string; reason?: unknown }>;
  states: RecordedStates;
}

/**
 * Checks a scenario's `expect` block against what the run did. Ordered lists are matched as
 * subsequences: each expected item must come after the one before it.
 *
 * @example
 * ```ts
 * const checks = checkExpectations({ noEvents: ["recheck.fired"] }, result);
 * checks.every((check) => check.ok);
 * ```
 */
export function checkExpectations(expect: ScenarioExpect, result: CheckedResult): Expectation[] {
  const checks: Expectation[] = [];
  const sessions = Object.keys(result.states);
  for (const spec of expect.states ?? []) {
    const session = spec.session ?? (sessions.length === 1 ? sessions[0] : undefined);
    const recorded = session === undefined ? undefined : result.states[session];
    const seen = spec.machine === "session" ? recorded?.session : recorded?.runs[spec.turn - 1]?.values;
    const who =
      spec.machine === "session"
        ? `session ${session ?? "?"}`
        : `run of turn ${spec.turn} in ${session ?? "?"}`;
    const missing = seen ? firstMissing(spec.values, seen, (want, got) => want === got) : 0;
    checks.push({
      ok: seen !== undefined && missing === -1,
      what: `${who} passes ${spec.values.join(" → ")}`,
      found:
        seen === undefined
          ? session === undefined
            ? "no session named (the scenario has several)"
            : `no such ${spec.machine}`
          : `${seen.join(" → ")}${missing >= 0 ? ` (missing ${spec.values[missing]} in order)` : ""}`,
    });
  }
  for (const spec of expect.acks ?? []) {
    const ack = result.acks.find((candidate) => candidate.messageId === spec.messageId);
    checks.push({
      ok: ack?.disposition === spec.disposition,
      what: `message ${spec.messageId} is acked ${spec.disposition}`,
      found: ack ? ack.disposition : "no ack",
    });
  }
  if (expect.deliveries) {
    const matchers = expect.deliveries.map((spec, index) => ({
      spec,
      pattern: compile(spec.textMatches, index),
    }));
    let from = 0;
    for (const { spec, pattern } of matchers) {
      const index = result.deliveries.findIndex(
        (delivery, position) =>
          position >= from &&
          (spec.kind === undefined || delivery.kind === spec.kind) &&
          (spec.session === undefined || delivery.session === spec.session) &&
          (spec.text === undefined || delivery.text === spec.text) &&
          (pattern === undefined || pattern.test(delivery.text.slice(0, 2000))),
      );
      if (index >= 0) from = index + 1;
      checks.push({
        ok: index >= 0,
        what: `a ${spec.kind ?? "delivery"}${spec.text !== undefined ? ` "${spec.text}"` : ""}${spec.textMatches !== undefined ? ` matching /${spec.textMatches}/` : ""} is delivered`,
        found: index >= 0 ? `delivered at position ${index + 1}` : describeDeliveries(result.deliveries),
      });
    }
  }
  if (expect.deliveryCount) {
    const { count, kind } = expect.deliveryCount;
    const actual = result.deliveries.filter(
      (delivery) => kind === undefined || delivery.kind === kind,
    ).length;
    checks.push({
      ok: actual === count,
      what: `${count} ${kind ?? "deliver"}${kind ? " deliveries" : "ies"}`,
      found: String(actual),
    });
  }
  if (expect.events) {
    let from = 0;
    for (const spec of expect.events) {
      const index = result.events.findIndex(
        (event, position) =>
          position >= from &&
          event.type === spec.type &&
          (spec.reason === undefined || event.reason === spec.reason),
      );
      if (index >= 0) from = index + 1;
      const same = result.events.filter((event) => event.type === spec.type);
      checks.push({
        ok: index >= 0,
        what: `event ${spec.type}${spec.reason ? ` (reason ${spec.reason})` : ""}`,
        found:
          index >= 0
            ? "emitted"
            : same.length === 0
              ? "not emitted"
              : `emitted only as ${same.map((event) => `${event.type} (reason ${String(event.reason)})`).join(", ")}, or not in order`,
      });
    }
  }
  for (const type of expect.noEvents ?? []) {
    const count = result.events.filter((event) => event.type === type).length;
    checks.push({
      ok: count === 0,
      what: `no event ${type}`,
      found: count === 0 ? "none" : `${count} emitted`,
    });
  }
  return checks;
}

/** Index of the first expected item not found in order, or -1 when all are. */
function firstMissing<T, U>(
  wanted: readonly T[],
  seen: readonly U[],
  same: (want: T, got: U) => boolean,
): number {
  let from = 0;
  for (let i = 0; i < wanted.length; i++) {
    let found = -1;
    for (let j = from; j < seen.length; j++) {
      if (same(wanted[i]!, seen[j]!)) {
        found = j;
        break;
      }
    }
    if (found < 0) return i;
    from = found + 1;
  }
  return -1;
}

function compile(pattern: string | undefined, index: number): RegExp | undefined {
  if (pattern === undefined) return undefined;
  const field = `expect.deliveries[${index}].textMatches`;
  try {
    checkPattern(field, pattern);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(field, "a safe regular expression", pattern, { cause: error });
  }
  return new RegExp(pattern, "i");
}

function describeDeliveries(deliveries: CheckedResult["deliveries"]): string {
  if (deliveries.length === 0) return "nothing was delivered";
  return deliveries.map((delivery) => `${delivery.kind} "${clip(delivery.text)}"`).join(", ");
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
