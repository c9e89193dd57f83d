import type { RunOutput } from "../../src/machines/run.machine.js";
import type { OwnedMessage } from "../../src/policy/turn-context.js";
import { expectedRecheckEvents, HISTORY, type Path, type RecheckEvent } from "./run-graph-cases.js";
import type { Replay } from "./run-replay.js";

// What must hold along every replayed path of the run machine (invariants 4 and 5), and what its output
// must say once it ended.

function ids(messages: readonly OwnedMessage[]): string[] {
  return messages.map((message) => message.id);
}

export const sameList = (a: readonly unknown[], b: readonly unknown[]) =>
  JSON.stringify(a) === JSON.stringify(b);
const sorted = (list: readonly string[]) => [...list].sort();

/** Invariants 4 and 5 while the run is alive, checked after every step; returns what is violated. */
export function stepViolations(replay: Replay, previousPasses: number): string[] {
  const problems: string[] = [];
  const { context } = replay.snapshot;
  const settings = replay.input.recheck;

  // Invariant 4: at most maxPasses re-checks; the counter only grows within the turn.
  const maxPasses = settings.enabled ? settings.maxPasses : 0;
  if (context.passes > maxPasses) problems.push(`passes ${context.passes} > maxPasses ${maxPasses}`);
  if (context.passes < previousPasses)
    problems.push(`passes went down from ${previousPasses} to ${context.passes}`);

  // Invariant 5: every message given to the run is owned, waiting, or dropped by a /stop (and said so):
  // exactly one of them, never lost.
  const owned = ids(context.owned);
  const waiting = ids(context.steerBuffer);
  const dropped = replay.emitted.flatMap((event) =>
    event.type === "message.dropped" ? [event.messageId] : [],
  );
  if (!sameList(sorted([...owned, ...waiting, ...dropped]), sorted(ids(replay.given)))) {
    problems.push(
      `owned ${owned} + waiting ${waiting} + dropped ${dropped} is not exactly the given ${ids(replay.given)}`,
    );
  }

  // What a model call saw, it saw once, and every later call still sees it: no message is shown twice
  // as a new user item, and none disappears from the turn. The history comes first, intact.
  const perCall = replay.shownPerCall();
  perCall.forEach((shown, index) => {
    if (new Set(shown).size !== shown.length)
      problems.push(`call ${index + 1} shows a message twice: ${shown}`);
    const before = perCall[index - 1] ?? [];
    if (!sameList(shown.slice(0, before.length), before)) {
      problems.push(`call ${index + 1} (${shown}) does not extend call ${index} (${before})`);
    }
  });
  for (const call of replay.calls) {
    if (!sameList(call.context.slice(0, call.turnStart), HISTORY))
      problems.push(`call ${call.call} lost the history`);
  }

  // Owned means shown to the model once the run has called it; nothing unowned was shown.
  const shown = replay.shown();
  for (const id of shown) if (!owned.includes(id)) problems.push(`${id} was shown but is not owned`);
  if (context.call > 0) {
    for (const id of owned) if (!shown.has(id)) problems.push(`${id} is owned but no model call saw it`);
  }
  return problems;
}

/** The run ended: its output must say exactly what happened. Returns what is violated. */
export function outputViolations(replay: Replay, path: Path): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };
  const snapshot = replay.snapshot;
  const output = snapshot.output as RunOutput;
  const settings = replay.input.recheck;
  check(output.status === snapshot.value, `status ${output.status} in state ${String(snapshot.value)}`);
  check(output.runId === replay.input.runId, "runId");

  // The final text only when done, and it is the last draft the model wrote.
  if (output.status === "done") {
    check(
      output.final === replay.drafts.at(-1) && output.final !== "",
      `final ${JSON.stringify(output.final)}`,
    );
  } else {
    check(output.final === "", `a ${output.status} run has the final ${JSON.stringify(output.final)}`);
  }
  check((output.error !== null) === (output.status === "failed"), "error set iff failed");
  check((output.abortReason !== null) === (output.status === "aborted"), "abortReason set iff aborted");

  // Invariant 5: each given message is answered (shown to a model call), left over, or dropped by a
  // /stop while still held back: exactly one of the three.
  const shown = replay.shown();
  const leftover = ids(output.leftover);
  const dropped = replay.emitted.flatMap((event) =>
    event.type === "message.dropped" ? [event.messageId] : [],
  );
  check(
    sameList(sorted(output.answered), sorted([...shown])),
    `answered ${output.answered}, shown ${[...shown]}`,
  );
  for (const id of leftover) check(!shown.has(id), `${id} is both answered and left over`);
  for (const id of dropped) check(!shown.has(id) && !leftover.includes(id), `${id} was dropped and kept`);
  check(
    sameList(sorted([...shown, ...leftover, ...dropped]), sorted(ids(replay.given))),
    `answered ${[...shown]} + leftover ${leftover} + dropped ${dropped} is not exactly the given ${ids(replay.given)}`,
  );
  // The journal holds the answered messages, once each, in the order the model saw them.
  const journalUsers = output.journal.flatMap((item) => (item.role === "user" ? [item.messageId] : []));
  check(sameList(journalUsers, replay.shownPerCall().at(-1) ?? []), `journal users ${journalUsers}`);
  // Steered messages that reached the model were announced once.
  const injected = replay.emitted.flatMap((event) =>
    event.type === "steer.injected" ? event.messageIds : [],
  );
  const steeredAndShown = ids(replay.given).filter((id) => id.startsWith("s") && shown.has(id));
  check(sameList(sorted(injected), sorted(steeredAndShown)), `steer.injected ${injected}`);
  // One at a time: every model call got at most one held steering message.
  if (replay.input.steering === "one-at-a-time")
    for (const event of replay.emitted)
      if (event.type === "steer.injected")
        check(event.messageIds.length === 1, `one call got steering ${event.messageIds}`);

  // Every tool call in the journal has exactly one result after it: no dangling call.
  const open = new Set<string>();
  const closed = new Set<string>();
  for (const item of output.journal) {
    if (item.role === "toolCall") {
      check(!open.has(item.callId) && !closed.has(item.callId), `tool call ${item.callId} recorded twice`);
      open.add(item.callId);
    }
    if (item.role === "toolResult") {
      check(open.has(item.callId), `result for ${item.callId} without an open call`);
      open.delete(item.callId);
      closed.add(item.callId);
    }
  }
  check(open.size === 0, `dangling tool calls: ${[...open]}`);
  // ...and the tool events agree with the journal.
  const results = output.journal.flatMap((item) => (item.role === "toolResult" ? [item] : []));
  const started = replay.emitted.flatMap((event) => (event.type === "tool.started" ? [event.callId] : []));
  const ended = replay.emitted.flatMap((event) => (event.type === "tool.ended" ? [event] : []));
  const skipped = replay.emitted.flatMap((event) => (event.type === "tool.skipped" ? [event.callId] : []));
  check(
    sameList(
      started,
      replay.toolInputs.map((toolInput) => toolInput.call.callId),
    ),
    `tool.started ${started}`,
  );
  check(
    sameList(
      ended.map((event) => [event.callId, event.status]),
      results.filter((result) => result.status !== "skipped").map((result) => [result.callId, result.status]),
    ),
    "tool.ended events differ from the journal's results",
  );
  check(
    sameList(
      skipped,
      results.filter((result) => result.status === "skipped").map((result) => result.callId),
    ),
    `tool.skipped ${skipped}`,
  );
  check(
    sameList(
      output.completedTools,
      ended.filter((event) => event.status === "done").map((event) => event.name),
    ),
    `completedTools ${output.completedTools}`,
  );

  // What was stored plus what the output still has to store is the journal, exactly once.
  check(
    sameList([...replay.stored, ...output.journal.slice(output.persisted)], output.journal),
    `stored ${replay.stored.length} items + journal from ${output.persisted} is not the journal (${output.journal.length})`,
  );

  // Invariant 4, and every firing and skip is an event with its reason.
  const recheckEvents = replay.emitted.filter(
    (event): event is RecheckEvent => event.type === "recheck.fired" || event.type === "recheck.skipped",
  );
  const expected = expectedRecheckEvents(path, settings);
  const asExpected =
    recheckEvents.length === expected.length &&
    expected.every((want, index) =>
      Object.entries(want).every(
        ([key, value]) => (recheckEvents[index] as Record<string, unknown>)[key] === value,
      ),
    );
  check(asExpected, `re-check events ${JSON.stringify(recheckEvents)}, expected ${JSON.stringify(expected)}`);
  const fired = recheckEvents.filter((event) => event.type === "recheck.fired").length;
  check(output.passes === fired, `passes ${output.passes}, recheck.fired ${fired}`);
  check(
    output.passes <= (settings.enabled ? settings.maxPasses : 0),
    `passes ${output.passes} over the limit`,
  );
  // The model call right after a firing is flagged as the re-check, and only that one.
  let afterFiring = false;
  for (const entry of replay.timeline) {
    if (entry.kind === "emitted" && entry.event.type === "recheck.fired") afterFiring = true;
    if (entry.kind === "call") {
      check(
        entry.input.recheck === afterFiring,
        `call ${entry.input.call} has recheck ${entry.input.recheck}`,
      );
      afterFiring = false;
    }
  }
  for (const [index, call] of replay.calls.entries())
    check(call.call === index + 1, `call numbered ${call.call}`);

  // The gateway's detector is consulted only when its verdict can lead to a re-draft, on the draft it
  // judges; a failure is said with recheck.detectorFailed and the built-in signals decide instead.
  const detectorSteps = path.steps.flatMap((step, index) =>
    step.event.type.endsWith(".detectStale") ? [index] : [],
  );
  // Asked as often as the graph settled it, plus once when the run was stopped while it judged.
  const unsettled = replay.detectInputs.length - detectorSteps.length;
  check(unsettled === 0 || (unsettled === 1 && output.status === "aborted"), "detector asked and settled");
  for (const input of replay.detectInputs) {
    check(
      settings.detector === "custom" && settings.enabled,
      "the detector was asked without being configured",
    );
    check(!input.facts.newerArrived, "the detector was asked although a newer message decided already");
    check(
      input.facts.draft.trim() !== "" && replay.drafts.includes(input.facts.draft),
      "detector facts: draft",
    );
    check(
      ids(replay.given).some((id) => replay.given.find((m) => m.id === id)?.text === input.facts.newest),
      "detector facts: newest",
    );
  }
  for (const index of detectorSteps) {
    const step = path.steps[index]!;
    const verdict = step.state.context.verdict;
    const steerWaited = path.steps[index - 1]!.state.context.steerBuffer.length > 0;
    if (step.event.type === "xstate.error.actor.detectStale") {
      check(verdict.detector === "built-in" && verdict.fallback === true, "a failed detector falls back");
    } else {
      check(verdict.detector === (steerWaited ? "built-in" : "custom"), `verdict by ${verdict.detector}`);
    }
  }
  const failures = replay.emitted.filter((event) => event.type === "recheck.detectorFailed");
  const failedSteps = path.steps.filter((step) => step.event.type === "xstate.error.actor.detectStale");
  check(failures.length === failedSteps.length, `recheck.detectorFailed ${failures.length}`);
  for (const failure of failures)
    check(
      failure.type === "recheck.detectorFailed" && failure.error.code === "DETECTOR_TIMEOUT",
      "failure code",
    );
  return problems;
}
