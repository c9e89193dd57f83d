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
  /** State values each commitment's actors passed through, by commitment id. */
  commitmentStates?: Record<string, string[]>;
  commitments?: Array<{ id: string; status: string; classification: string }>;
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
    if (spec.machine === "commitment") {
      checks.push(commitmentStates(spec.commitment ?? "", spec.values, result.commitmentStates ?? {}));
      continue;
    }
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
          (spec.reason === undefined || event.reason === spec.reason) &&
          Object.entries(spec.fields ?? {}).every(
            ([field, value]) => (event as Record<string, unknown>)[field] === value,
          ),
      );
      if (index >= 0) from = index + 1;
      const same = result.events.filter((event) => event.type === spec.type);
      const shown = (event: CheckedResult["events"][number]) =>
        spec.fields
          ? `${event.type} ${describeFields(Object.keys(spec.fields), event as Record<string, unknown>)}`
          : `${event.type} (reason ${String(event.reason)})`;
      checks.push({
        ok: index >= 0,
        what: `event ${spec.type}${spec.reason ? ` (reason ${spec.reason})` : ""}${spec.fields ? ` ${describeFields(Object.keys(spec.fields), spec.fields)}` : ""}`,
        found:
          index >= 0
            ? "emitted"
            : same.length === 0
              ? "not emitted"
              : `emitted only as ${same.map(shown).join(", ")}, or not in order`,
      });
    }
  }
  for (const spec of expect.commitments ?? []) {
    const found = result.commitments?.find((commitment) => commitment.id === spec.id);
    checks.push({
      ok:
        found?.status === spec.status &&
        (spec.classification === undefined || found.classification === spec.classification),
      what: `commitment ${spec.id} ends ${spec.status}${spec.classification ? ` (${spec.classification})` : ""}`,
      found: found
        ? `${found.status}${found.classification ? ` (${found.classification})` : ""}`
        : "no such commitment",
    });
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

function commitmentStates(
  id: string,
  values: readonly string[],
  recorded: Record<string, string[]>,
): Expectation {
  const seen = recorded[id];
  const missing = seen ? firstMissing(values, seen, (want, got) => want === got) : 0;
  return {
    ok: seen !== undefined && missing === -1,
    what: `commitment ${id} passes ${values.join(" → ")}`,
    found:
      seen === undefined
        ? "no actor of it ran"
        : `${seen.join(" → ")}${missing >= 0 ? ` (missing ${values[missing]} in order)` : ""}`,
  };
}

/** `{ id: c1, why: operator }`, the named fields of an event or an expectation. */
function describeFields(names: readonly string[], values: Record<string, unknown>): string {
  return `{ ${names.map((name) => `${name}: ${String(values[name])}`).join(", ")} }`;
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
