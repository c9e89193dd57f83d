import { describe, expect, it } from "vitest";
import { createActor, fromPromise, type SnapshotFrom } from "xstate";
import type { StatePath } from "xstate/graph";
import { getAdjacencyMap, getShortestPaths, getSimplePaths } from "xstate/graph";
import {
  type CallModelInput,
  type CallModelOutput,
  type DetectStaleInput,
  type DetectStaleOutput,
  type RecheckSettings,
  type RunEmitted,
  type RunEvent,
  type RunInput,
  type RunOutput,
  type RunToolInput,
  type RunToolOutput,
  runMachine,
} from "../../src/machines/run.machine.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "../../src/policy/stale-reply.js";
import type { ModelMessage, OwnedMessage, ToolCallRequest, TurnItem } from "../../src/policy/turn-context.js";
import { type Deferred, deferred } from "../support/deferred.js";

// Graph-based tests of the run machine (docs/architecture.md; invariants 4 and 5). xstate/graph enumerates the
// machine's paths over an explicit event list that includes the results of the invoked actors; each path
// is then replayed on a real actor whose `callModel` and `runTool` are deferreds the test settles, so a
// graph event becomes a real action: send the event, or resolve / reject the pending actor. After every
// step the real actor must be where the graph says, and the invariants must hold.

type Snapshot = SnapshotFrom<typeof runMachine>;

type GraphEvent =
  | RunEvent
  | { type: "xstate.done.actor.callModel"; output: CallModelOutput }
  | { type: "xstate.error.actor.callModel"; error: unknown }
  | { type: "xstate.done.actor.runTool"; output: RunToolOutput }
  | { type: "xstate.error.actor.runTool"; error: unknown }
  | { type: "xstate.done.actor.detectStale"; output: DetectStaleOutput }
  | { type: "xstate.error.actor.detectStale"; error: unknown };

type Path = StatePath<Snapshot, GraphEvent>;

interface GraphConfig {
  title: string;
  messages: string[];
  olderUserTexts?: string[];
  recheck?: Partial<RecheckSettings>;
  /** The text of every final draft the model returns in this graph. */
  draft: string;
  autoStart?: boolean;
  /** Also replay every simple path (only where the graph is small enough). */
  simplePaths?: boolean;
}

const STEER_TEXT = "Actually, don't touch notes.md; what about Berlin tonight?";
const TOOL_CALLS: ToolCallRequest[] = [
  { callId: "c1", name: "write_file", args: { path: "checklist.md" } },
  { callId: "c2", name: "search", args: { query: "item 2" } },
];
const HISTORY: ModelMessage[] = [
  { role: "user", text: "hello", messageId: "h0" },
  { role: "assistant", text: "Hi! How can I help?" },
];

const CONFIGS: GraphConfig[] = [
  {
    title: "steering with maxPasses 1",
    messages: ["Break down item 2 and update the file"],
    draft: "Done: checklist.md now lists item 2 in three steps.",
    simplePaths: true,
  },
  {
    title: "steering with maxPasses 2",
    messages: ["Break down item 2 and update the file"],
    recheck: { maxPasses: 2 },
    draft: "Done: checklist.md now lists item 2 in three steps.",
  },
  {
    title: "steering with maxPasses 0",
    messages: ["Break down item 2 and update the file"],
    recheck: { maxPasses: 0 },
    draft: "Done: checklist.md now lists item 2 in three steps.",
  },
  {
    title: "steering with the re-check disabled",
    messages: ["Break down item 2 and update the file"],
    recheck: { enabled: false },
    draft: "Done: checklist.md now lists item 2 in three steps.",
    simplePaths: true,
  },
  {
    title: "a complaint the draft ignores",
    messages: ["You didn't answer my question."],
    olderUserTexts: ["When do deploys run?"],
    draft: "Our release notes are in the wiki.",
  },
  {
    title: "a draft that answers an older message",
    messages: ["What's the weather in Paris today?", "Actually, what about Berlin tonight?"],
    draft: "Paris weather today: sunny in Paris, 24 degrees.",
  },
  {
    title: "the gateway's own detector",
    messages: ["Break down item 2 and update the file"],
    recheck: { detector: "custom" },
    draft: "Done: checklist.md now lists item 2 in three steps.",
  },
  {
    title: "the gateway's own detector with maxPasses 2, on a draft the built-in signals call stale",
    messages: ["What's the weather in Paris today?", "Actually, what about Berlin tonight?"],
    recheck: { detector: "custom", maxPasses: 2 },
    draft: "Paris weather today: sunny in Paris, 24 degrees.",
  },
  {
    title: "an auto-started run",
    messages: ["Break down item 2 and update the file"],
    draft: "Done: checklist.md now lists item 2 in three steps.",
    autoStart: true,
  },
];

function runInput(config: GraphConfig): RunInput {
  return {
    runId: "run-1",
    session: "telegram:42",
    kind: "turn",
    messages: config.messages.map((text, index) => ({
      id: `m${index + 1}`,
      text,
      channel: "telegram",
      at: index,
    })),
    preamble: [],
    history: HISTORY,
    olderUserTexts: config.olderUserTexts ?? [],
    recheck: {
      enabled: true,
      maxPasses: 1,
      minOverlap: 0.2,
      complaintPatterns: [...DEFAULT_COMPLAINT_PATTERNS],
      ...config.recheck,
    },
    tools: ["write_file", "search"],
    cancellableTools: ["search"],
    ...(config.autoStart ? { autoStart: true } : {}),
  };
}

function graphEvents(config: GraphConfig): GraphEvent[] {
  return [
    { type: "run.start" },
    { type: "run.steer", message: { id: "steer", text: STEER_TEXT, channel: "telegram", at: 10 } },
    { type: "run.abort", reason: "stopped by the test" },
    { type: "run.stop", reason: "stopped by /stop" },
    { type: "run.abort", reason: "the lane timeout", abandon: true },
    {
      type: "xstate.done.actor.callModel",
      output: { text: "Let me update the file.", toolCalls: TOOL_CALLS, persisted: 0 },
    },
    { type: "xstate.done.actor.callModel", output: { text: config.draft, toolCalls: [], persisted: 0 } },
    {
      type: "xstate.error.actor.callModel",
      error: { code: "MODEL_DOWN", message: "the model is down", retryable: true },
    },
    { type: "xstate.done.actor.runTool", output: { status: "done", result: "ok", persisted: 0 } },
    { type: "xstate.error.actor.runTool", error: new Error("the tool crashed") },
    ...(config.recheck?.detector === "custom" ? DETECTOR_EVENTS : []),
  ];
}

/** The gateway's detector answers: not stale, stale, or fails (a timeout), which falls back to the built-ins. */
const DETECTOR_EVENTS: GraphEvent[] = [
  { type: "xstate.done.actor.detectStale", output: { stale: false } },
  {
    type: "xstate.done.actor.detectStale",
    output: { stale: true, reason: "low-overlap", detail: "the judge says so", figures: { score: 0.9 } },
  },
  {
    type: "xstate.error.actor.detectStale",
    error: { code: "DETECTOR_TIMEOUT", message: "staleReplyRecheck.detect: no verdict within 5000 ms" },
  },
];

/** The state value plus small bounded facts; the journal, drafts and counters are left out. */
function stateKey(snapshot: Snapshot): string {
  const { context } = snapshot;
  const key: unknown[] = [
    snapshot.status,
    snapshot.value,
    context.passes,
    context.steerBuffer.length > 0,
    context.toolIndex,
  ];
  // With the gateway's detector, the last verdict and who decided it: the fired and skipped events say
  // so, so the graph keeps them apart (a state reached with another verdict must not stand in for it).
  if (context.input.recheck.detector === "custom") {
    const { verdict } = context;
    key.push(verdict.stale, verdict.reason ?? null, verdict.detector ?? null, verdict.fallback === true);
  }
  return JSON.stringify(key);
}

/** Only what can happen: actor results while that actor runs, nothing after the run ended. */
function isPossible(snapshot: Snapshot, event: GraphEvent): boolean {
  if (snapshot.status !== "active") return false;
  if (event.type.endsWith(".callModel")) return snapshot.matches("streaming");
  if (event.type.endsWith(".runTool")) return snapshot.matches({ toolBatch: "toolRunning" });
  if (event.type.endsWith(".detectStale")) return snapshot.matches({ finalizing: "detecting" });
  return true;
}

function traversal(config: GraphConfig) {
  return {
    input: runInput(config),
    events: graphEvents(config) as RunEvent[],
    serializeState: stateKey,
    filterEvents: (snapshot: Snapshot, event: RunEvent) => isPossible(snapshot, event as GraphEvent),
    limit: 5_000,
  };
}

const shortestCache = new Map<GraphConfig, Path[]>();
const simpleCache = new Map<GraphConfig, Path[]>();

function shortestPaths(config: GraphConfig): Path[] {
  let paths = shortestCache.get(config);
  if (!paths) {
    paths = getShortestPaths(runMachine, traversal(config)) as unknown as Path[];
    shortestCache.set(config, paths);
  }
  return paths;
}

/**
 * Simple paths, without those that are the beginning of a longer one (its steps are all checked on the
 * longer path): what is left are the complete runs, one per way of reaching an ending.
 */
function simplePaths(config: GraphConfig): Path[] {
  let paths = simpleCache.get(config);
  if (!paths) {
    const all = getSimplePaths(runMachine, traversal(config)) as unknown as Path[];
    const sequences = all
      .map((path) => ({ path, events: path.steps.slice(1).map((step) => JSON.stringify(step.event)) }))
      .sort((a, b) => b.events.length - a.events.length);
    const kept: typeof sequences = [];
    for (const candidate of sequences) {
      const isPrefix = kept.some((longer) =>
        candidate.events.every((event, index) => longer.events[index] === event),
      );
      if (!isPrefix) kept.push(candidate);
    }
    paths = kept.map((entry) => entry.path);
    simpleCache.set(config, paths);
  }
  return paths;
}

// ---------------------------------------------------------------------------------------------------
// Names

function stateLabel(snapshot: Snapshot): string {
  const value = snapshot.value;
  const name =
    typeof value === "string"
      ? value
      : Object.entries(value)
          .map(([key, child]) =>
            typeof child === "string"
              ? `${key}.${child}`
              : `${key}.${Object.entries(child ?? {})
                  .map(([k, v]) => `${k}.${String(v)}`)
                  .join("")}`,
          )
          .join("");
  const facts = [
    snapshot.context.passes > 0 ? `pass ${snapshot.context.passes}` : "",
    snapshot.context.steerBuffer.length > 0 ? "steer waiting" : "",
    snapshot.matches("toolBatch") ? `tool ${snapshot.context.toolIndex + 1}` : "",
  ].filter(Boolean);
  return facts.length > 0 ? `${name} (${facts.join(", ")})` : name;
}

function eventLabel(event: GraphEvent): string {
  switch (event.type) {
    case "run.start":
      return "start";
    case "run.steer":
      return "steer";
    case "run.notice":
      return "notice";
    case "run.abort":
      return event.abandon ? "abort (lane timeout)" : "abort";
    case "run.stop":
      return "/stop";
    case "xstate.done.actor.callModel":
      return event.output.toolCalls.length > 0 ? "model asks for tools" : "model drafts a final";
    case "xstate.error.actor.callModel":
      return "model fails";
    case "xstate.done.actor.runTool":
      return "tool ends";
    case "xstate.error.actor.runTool":
      return "tool throws";
    case "xstate.done.actor.detectStale":
      return event.output.stale ? "detector says stale" : "detector says fine";
    case "xstate.error.actor.detectStale":
      return "detector times out";
  }
}

function pathName(path: Path): string {
  const [first, ...rest] = path.steps;
  const parts = [first ? stateLabel(first.state) : "?"];
  for (const step of rest) parts.push(`—${eventLabel(step.event)}→ ${stateLabel(step.state)}`);
  return parts.join(" ");
}

// ---------------------------------------------------------------------------------------------------
// The expectation a path carries: which re-check events the machine must emit along it.

type RecheckEvent = Extract<RunEmitted, { type: "recheck.fired" | "recheck.skipped" }>;

function expectedRecheckEvents(path: Path, settings: RecheckSettings): Array<Partial<RecheckEvent>> {
  const expected: Array<Partial<RecheckEvent>> = [];
  for (let i = 1; i < path.steps.length; i++) {
    const before = path.steps[i - 1]!.state;
    const after = path.steps[i]!.state;
    const verdict = after.context.verdict;
    const by = { detector: verdict.detector, fallback: verdict.fallback === true };
    if (after.context.passes > before.context.passes) {
      expected.push({ type: "recheck.fired", reason: verdict.reason, pass: after.context.passes, ...by });
    }
    if (after.value === "done" && verdict.stale) {
      expected.push({
        type: "recheck.skipped",
        reason: settings.enabled ? "limit" : "disabled",
        signal: verdict.reason,
        ...by,
      });
    }
  }
  return expected;
}

// ---------------------------------------------------------------------------------------------------
// Replay on a real actor

/** Lets promise callbacks and the actor's reactions to them run; no timer, no wall-clock wait. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Replays by run id: the fake actors are provided once and find their replay through their input. */
const replays = new Map<string, Replay>();

const testLogic = runMachine.provide({
  actors: {
    callModel: fromPromise<CallModelOutput, CallModelInput>(({ input }) =>
      replayOf(input.runId).startModel(input),
    ),
    runTool: fromPromise<RunToolOutput, RunToolInput>(({ input }) => replayOf(input.runId).startTool(input)),
    detectStale: fromPromise<DetectStaleOutput, DetectStaleInput>(({ input }) =>
      replayOf(input.runId).startDetect(input),
    ),
  },
});

function replayOf(runId: string): Replay {
  const replay = replays.get(runId);
  if (!replay) throw new Error(`no replay for run ${runId}`);
  return replay;
}

let replayCount = 0;

class Replay {
  readonly input: RunInput;
  readonly calls: CallModelInput[] = [];
  readonly toolInputs: RunToolInput[] = [];
  readonly detectInputs: DetectStaleInput[] = [];
  readonly emitted: RunEmitted[] = [];
  /** Model calls and emitted events, in order. */
  readonly timeline: Array<{ kind: "call"; input: CallModelInput } | { kind: "emitted"; event: RunEmitted }> =
    [];
  /** What the fake actors stored: an actor stores its items when it succeeds, as one unit. */
  readonly stored: TurnItem[] = [];
  readonly given: OwnedMessage[];
  readonly drafts: string[] = [];
  private model: { input: CallModelInput; result: Deferred<CallModelOutput> } | null = null;
  private tool: { input: RunToolInput; result: Deferred<RunToolOutput> } | null = null;
  private detector: Deferred<DetectStaleOutput> | null = null;
  private steers = 0;
  readonly actor;

  constructor(input: RunInput) {
    replayCount++;
    this.input = { ...input, runId: `run-${replayCount}` };
    replays.set(this.input.runId, this);
    this.given = [...input.messages];
    this.actor = createActor(testLogic, { input: this.input });
    this.actor.on("*", (event) => {
      this.emitted.push(event);
      this.timeline.push({ kind: "emitted", event });
    });
  }

  startModel(input: CallModelInput): Promise<CallModelOutput> {
    const result = deferred<CallModelOutput>();
    this.calls.push(input);
    this.timeline.push({ kind: "call", input });
    this.model = { input, result };
    return result.promise;
  }

  startTool(input: RunToolInput): Promise<RunToolOutput> {
    const result = deferred<RunToolOutput>();
    this.toolInputs.push(input);
    this.tool = { input, result };
    return result.promise;
  }

  startDetect(input: DetectStaleInput): Promise<DetectStaleOutput> {
    const result = deferred<DetectStaleOutput>();
    this.detectInputs.push(input);
    this.detector = result;
    return result.promise;
  }

  async start(): Promise<void> {
    this.actor.start();
    await settle();
  }

  /** The run is over: forget it (its stopped actors' promises never settle). */
  dispose(): void {
    this.actor.stop();
    replays.delete(this.input.runId);
  }

  /** Performs the real action a graph event stands for. */
  async apply(event: GraphEvent): Promise<void> {
    switch (event.type) {
      case "run.start":
      case "run.abort":
      case "run.stop":
        this.actor.send(event);
        break;
      case "run.steer": {
        this.steers++;
        const message = { ...event.message, id: `s${this.steers}`, at: 10 + this.steers };
        this.given.push(message);
        this.actor.send({ type: "run.steer", message });
        break;
      }
      case "xstate.done.actor.callModel": {
        const pending = this.takeModel();
        const toolCalls = event.output.toolCalls.map((call) => ({
          ...call,
          callId: `${call.callId}-call${pending.input.call}`,
        }));
        if (toolCalls.length === 0) this.drafts.push(event.output.text);
        this.stored.push(...pending.input.unpersisted);
        pending.result.resolve({
          text: event.output.text,
          toolCalls,
          persisted: pending.input.unpersisted.length,
        });
        break;
      }
      case "xstate.error.actor.callModel":
        this.takeModel().result.reject(event.error);
        break;
      case "xstate.done.actor.runTool": {
        const pending = this.takeTool();
        this.stored.push(...pending.input.unpersisted);
        pending.result.resolve({ ...event.output, persisted: pending.input.unpersisted.length });
        break;
      }
      case "xstate.error.actor.runTool":
        this.takeTool().result.reject(event.error);
        break;
      case "xstate.done.actor.detectStale":
        this.takeDetector().resolve(event.output);
        break;
      case "xstate.error.actor.detectStale":
        this.takeDetector().reject(event.error);
        break;
    }
    await settle();
  }

  get snapshot(): Snapshot {
    return this.actor.getSnapshot();
  }

  /** Ids of user messages in each model call's view of this turn, in order. */
  shownPerCall(): string[][] {
    return this.calls.map((call) =>
      call.context
        .slice(call.turnStart)
        .flatMap((message) => (message.role === "user" ? [message.messageId] : [])),
    );
  }

  shown(): Set<string> {
    return new Set(this.shownPerCall().flat());
  }

  private takeModel() {
    const pending = this.model;
    if (!pending) throw new Error("the graph settles a model call, but none is running on the real actor");
    this.model = null;
    return pending;
  }

  private takeDetector() {
    const pending = this.detector;
    if (!pending) throw new Error("the graph settles the detector, but none is running on the real actor");
    this.detector = null;
    return pending;
  }

  private takeTool() {
    const pending = this.tool;
    if (!pending) throw new Error("the graph settles a tool, but none is running on the real actor");
    this.tool = null;
    return pending;
  }
}

function ids(messages: readonly OwnedMessage[]): string[] {
  return messages.map((message) => message.id);
}

const sameList = (a: readonly unknown[], b: readonly unknown[]) => JSON.stringify(a) === JSON.stringify(b);
const sorted = (list: readonly string[]) => [...list].sort();

/** Invariants 4 and 5 while the run is alive, checked after every step; returns what is violated. */
function stepViolations(replay: Replay, previousPasses: number): string[] {
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
function outputViolations(replay: Replay, path: Path): string[] {
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

async function replayPath(config: GraphConfig, path: Path): Promise<Replay> {
  const replay = new Replay(runInput(config));
  try {
    await replay.start();
    await followPath(replay, path);
  } finally {
    replay.dispose();
  }
  return replay;
}

async function followPath(replay: Replay, path: Path): Promise<void> {
  const [first, ...rest] = path.steps;
  expect(first).toBeDefined();
  expect(stateKey(replay.snapshot)).toBe(stateKey(first!.state));
  expect(stepViolations(replay, 0)).toEqual([]);
  for (const [index, step] of rest.entries()) {
    const passes = replay.snapshot.context.passes;
    await replay.apply(step.event);
    const where = `step ${index + 1} (${eventLabel(step.event)})`;
    const problems = stepViolations(replay, passes);
    if (stateKey(replay.snapshot) !== stateKey(step.state)) {
      problems.unshift(
        `the actor is in ${stateKey(replay.snapshot)}, the graph says ${stateKey(step.state)}`,
      );
    }
    expect(problems, where).toEqual([]);
  }
  if (replay.snapshot.status === "done") expect(outputViolations(replay, path), "the output").toEqual([]);
  else expect(replay.snapshot.status).toBe("active");
}

// ---------------------------------------------------------------------------------------------------

for (const config of CONFIGS) {
  const shortest = shortestPaths(config);

  describe(`run machine, ${config.title}: shortest paths`, () => {
    it("reaches every outcome of the run: done, aborted and failed", () => {
      const outcomes = new Set(shortest.map((path) => String(path.state.value)));
      for (const outcome of ["done", "aborted", "failed"]) expect(outcomes.has(outcome)).toBe(true);
    });

    for (const path of shortest) {
      it(`keeps its invariants along ${pathName(path)}`, async () => {
        await replayPath(config, path);
      });
    }
  });

  if (config.simplePaths) {
    const simple = simplePaths(config);
    describe(`run machine, ${config.title}: simple paths`, () => {
      for (const path of simple) {
        it(`keeps its invariants along ${pathName(path)}`, async () => {
          await replayPath(config, path);
        });
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Both sides of the re-check limit, on paths the graph produced.

function configNamed(title: string): GraphConfig {
  const config = CONFIGS.find((candidate) => candidate.title === title);
  if (!config) throw new Error(`no graph config "${title}"`);
  return config;
}

function findPath(config: GraphConfig, wanted: Array<Partial<RecheckEvent>>): Path {
  const settings = runInput(config).recheck;
  const paths = [...shortestPaths(config), ...(config.simplePaths ? simplePaths(config) : [])]
    .filter((path) => path.state.value === "done")
    .sort((a, b) => a.steps.length - b.steps.length);
  const path = paths.find((candidate) => {
    const expected = expectedRecheckEvents(candidate, settings);
    return (
      expected.length === wanted.length &&
      expected.every(
        (event, index) => event.type === wanted[index]?.type && event.reason === wanted[index]?.reason,
      )
    );
  });
  if (!path) throw new Error(`the graph of "${config.title}" has no path with ${JSON.stringify(wanted)}`);
  return path;
}

function recheckEventsOf(replay: Replay) {
  return replay.emitted.filter((event) => event.type === "recheck.fired" || event.type === "recheck.skipped");
}

describe("run machine: the re-check limit", () => {
  it("re-checks a draft made stale by a steered message once, then ships the next stale draft with recheck.skipped (limit)", async () => {
    const config = configNamed("steering with maxPasses 1");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "newer-message" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.fired", reason: "newer-message", pass: 1 }),
      expect.objectContaining({ type: "recheck.skipped", reason: "limit", signal: "newer-message" }),
    ]);
    const output = replay.snapshot.output as RunOutput;
    expect(output.status).toBe("done");
    expect(output.passes).toBe(1);
    // The message that made the second draft stale was never shown: it is handed back, not lost.
    expect(output.leftover.length).toBeGreaterThan(0);
  });

  it("re-checks a draft that ignores a complaint once, then ships the second with recheck.skipped (limit)", async () => {
    const config = configNamed("a complaint the draft ignores");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "complaint" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.fired", reason: "complaint", pass: 1 }),
      expect.objectContaining({ type: "recheck.skipped", reason: "limit", signal: "complaint" }),
    ]);
    expect(replay.calls.map((call) => call.recheck)).toEqual([false, true]);
  });

  it("re-checks a draft that answers an older message for the low-overlap signal", async () => {
    const config = configNamed("a draft that answers an older message");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "low-overlap" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)[0]).toMatchObject({
      type: "recheck.fired",
      reason: "low-overlap",
      pass: 1,
    });
  });

  it("re-checks at most twice with maxPasses 2", async () => {
    const config = configNamed("steering with maxPasses 2");
    const path = findPath(config, [
      { type: "recheck.fired", reason: "newer-message" },
      { type: "recheck.fired", reason: "newer-message" },
      { type: "recheck.skipped", reason: "limit" },
    ]);
    const replay = await replayPath(config, path);
    expect((replay.snapshot.output as RunOutput).passes).toBe(2);
  });

  it("never re-checks with maxPasses 0 and says so with recheck.skipped (limit)", async () => {
    const config = configNamed("steering with maxPasses 0");
    const path = findPath(config, [{ type: "recheck.skipped", reason: "limit" }]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.skipped", reason: "limit" }),
    ]);
    expect(replay.calls.every((call) => !call.recheck)).toBe(true);
  });

  it("never re-checks when disabled and says so with recheck.skipped (disabled)", async () => {
    const config = configNamed("steering with the re-check disabled");
    const path = findPath(config, [{ type: "recheck.skipped", reason: "disabled" }]);
    const replay = await replayPath(config, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.skipped", reason: "disabled", signal: "newer-message" }),
    ]);
    expect((replay.snapshot.output as RunOutput).passes).toBe(0);
  });
});

describe("run machine: an abort before the first model call", () => {
  it("hands every message back as leftover and stores nothing for the turn", async () => {
    const config = configNamed("steering with maxPasses 1");
    const path = simplePaths(config).find((candidate) =>
      sameList(
        candidate.steps.map((step) => step.event.type),
        ["xstate.init", "run.steer", "run.abort"],
      ),
    );
    expect(path).toBeDefined();
    const replay = await replayPath(config, path!);
    const output = replay.snapshot.output as RunOutput;
    expect(replay.calls).toEqual([]);
    expect(output.answered).toEqual([]);
    expect(output.leftover.map((message) => message.id)).toEqual(["m1", "s1"]);
    expect(output.journal.filter((item) => item.role === "user")).toEqual([]);
  });
});

/** Every state of a config's graph with every transition out of it. */
function adjacency(
  config: GraphConfig,
): Record<string, { state: Snapshot; transitions: Record<string, { event: GraphEvent; state: Snapshot }> }> {
  return getAdjacencyMap(runMachine as never, traversal(config) as never) as never;
}

describe("run machine: the gateway's own detector", () => {
  const plain = configNamed("the gateway's own detector");
  const stale = configNamed(
    "the gateway's own detector with maxPasses 2, on a draft the built-in signals call stale",
  );

  it("enumerates the detecting state and every way out of it: a verdict, a failure, an abort, a /stop", () => {
    const out = new Set<string>();
    for (const { state, transitions } of Object.values(adjacency(plain))) {
      if (!state.matches({ finalizing: "detecting" })) continue;
      // An event the state ignores leaves it as it was: not a way out.
      for (const { event, state: next } of Object.values(transitions))
        if (stateKey(next) !== stateKey(state))
          out.add(`${event.type} → ${String(stateLabel(next)).replace(/ \(.*\)$/, "")}`);
    }
    expect([...out].sort()).toEqual([
      "run.abort → aborted",
      "run.steer → finalizing.detecting",
      "run.stop → aborted",
      "xstate.done.actor.detectStale → done",
      "xstate.done.actor.detectStale → streaming",
      "xstate.error.actor.detectStale → done",
      "xstate.error.actor.detectStale → streaming",
    ]);
  });

  /** The path through the graph's own transitions for this sequence of (labelled) events. */
  function pathWith(config: GraphConfig, labels: string[]): Path {
    const map = adjacency(config);
    const first = shortestPaths(config)[0]!.steps[0]!;
    const steps: Path["steps"] = [first];
    for (const label of labels) {
      const from = steps.at(-1)!.state;
      const next = Object.values(map[stateKey(from)]?.transitions ?? {}).find(
        (transition) => eventLabel(transition.event) === label,
      );
      if (!next) throw new Error(`no "${label}" from ${stateLabel(from)}`);
      steps.push({ state: next.state, event: next.event });
    }
    return { state: steps.at(-1)!.state, steps, weight: steps.length };
  }

  it("re-drafts on the detector's stale verdict, with its figures, and says the detector decided", async () => {
    const path = pathWith(plain, ["start", "model drafts a final", "detector says stale"]);
    const replay = await replayPath(plain, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({
        type: "recheck.fired",
        reason: "low-overlap",
        detail: "the judge says so",
        detector: "custom",
        fallback: false,
        figures: { score: 0.9 },
      }),
    ]);
    expect(replay.detectInputs[0]?.facts).toMatchObject({
      draft: plain.draft,
      newest: plain.messages[0],
      newerArrived: false,
    });
  });

  it("ships the draft when the detector finds it fine, although the built-in signals would not", async () => {
    const path = pathWith(stale, ["start", "model drafts a final", "detector says fine"]);
    const replay = await replayPath(stale, path);
    expect(recheckEventsOf(replay)).toEqual([]);
    expect((replay.snapshot.output as RunOutput).final).toBe(stale.draft);
  });

  it("falls back to the built-in signals when the detector times out, and says so", async () => {
    const path = pathWith(stale, ["start", "model drafts a final", "detector times out"]);
    const replay = await replayPath(stale, path);
    expect(replay.emitted.filter((event) => event.type === "recheck.detectorFailed")).toEqual([
      expect.objectContaining({
        error: expect.objectContaining({ code: "DETECTOR_TIMEOUT" }),
        fallback: "built-in",
      }),
    ]);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({
        type: "recheck.fired",
        reason: "low-overlap",
        detector: "built-in",
        fallback: true,
        figures: expect.objectContaining({ newestOverlap: 0 }),
      }),
    ]);
  });

  it("calls a draft stale for newer-message when a message is steered in while the detector judges", async () => {
    const path = pathWith(plain, ["start", "model drafts a final", "steer", "detector says fine"]);
    const replay = await replayPath(plain, path);
    expect(recheckEventsOf(replay)).toEqual([
      expect.objectContaining({ type: "recheck.fired", reason: "newer-message", detector: "built-in" }),
    ]);
    expect(replay.calls.at(-1)?.recheck).toBe(true);
  });
});
