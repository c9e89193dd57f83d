import { getAdjacencyMap, getShortestPaths, getSimplePaths, type StatePath } from "xstate/graph";
import {
  type DetectStaleOutput,
  type RecheckSettings,
  type RunEmitted,
  type RunEvent,
  type RunInput,
  runMachine,
} from "../../src/machines/run.machine.js";
import { DEFAULT_COMPLAINT_PATTERNS } from "../../src/policy/stale-reply.js";
import type { ModelMessage, ToolCallRequest } from "../../src/policy/turn-context.js";
import type { RunGraphEvent, RunSnapshot } from "../../src/testing/run-graph.js";

// The run machine's graph for the graph-based tests (docs/architecture.md; invariants 4 and 5): the
// configurations, the explicit event list (with the results of the invoked actors), the traversal, the
// paths xstate/graph enumerates over it, and their names. run-replay.ts replays a path on a real actor.

export type Snapshot = RunSnapshot;

/** The shipped graph's events, and the answers of the gateway's own detector. */
export type GraphEvent =
  | RunGraphEvent
  | { type: "xstate.done.actor.detectStale"; output: DetectStaleOutput }
  | { type: "xstate.error.actor.detectStale"; error: unknown };

export type Path = StatePath<Snapshot, GraphEvent>;

export interface GraphConfig {
  title: string;
  messages: string[];
  olderUserTexts?: string[];
  recheck?: Partial<RecheckSettings>;
  /** The text of every final draft the model returns in this graph. */
  draft: string;
  /** `queue.steering`: each model call gets one held steering message. */
  steering?: "one-at-a-time";
  /** Also replay every simple path (only where the graph is small enough). */
  simplePaths?: boolean;
}

const STEER_TEXT = "Actually, don't touch notes.md; what about Berlin tonight?";
const TOOL_CALLS: ToolCallRequest[] = [
  { callId: "c1", name: "write_file", args: { path: "checklist.md" } },
  { callId: "c2", name: "search", args: { query: "item 2" } },
];
export const HISTORY: ModelMessage[] = [
  { role: "user", text: "hello", messageId: "h0" },
  { role: "assistant", text: "Hi! How can I help?" },
];

export const CONFIGS: GraphConfig[] = [
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
    title: "steering one message at a time",
    messages: ["Break down item 2 and update the file"],
    draft: "Done: checklist.md now lists item 2 in three steps.",
    steering: "one-at-a-time",
  },
];

export function runInput(config: GraphConfig): RunInput {
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
    ...(config.steering ? { steering: config.steering } : {}),
  };
}

function graphEvents(config: GraphConfig): GraphEvent[] {
  return [
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
export function stateKey(snapshot: Snapshot): string {
  const { context } = snapshot;
  const key: unknown[] = [
    snapshot.status,
    snapshot.value,
    context.passes,
    // One at a time, how many wait matters: a second one is still held after the next call.
    context.input.steering === "one-at-a-time"
      ? Math.min(context.steerBuffer.length, 2)
      : context.steerBuffer.length > 0,
    context.toolIndex,
  ];
  // ... and how many the turn owns, so a path that held two and injected them is kept apart.
  if (context.input.steering === "one-at-a-time") key.push(Math.min(context.owned.length, 3));
  // The last verdict (and, with the gateway's detector, who decided it): the fired and skipped events
  // say so, so the graph keeps them apart (a state reached with another verdict must not stand in for
  // it: a re-check fired for a complaint and one fired for a steered message both re-enter `streaming`).
  const { verdict } = context;
  key.push(verdict.stale, verdict.reason ?? null);
  if (context.input.recheck.detector === "custom")
    key.push(verdict.detector ?? null, verdict.fallback === true);
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

export function traversal(config: GraphConfig) {
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

export function shortestPaths(config: GraphConfig): Path[] {
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
export function simplePaths(config: GraphConfig): Path[] {
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

export function stateLabel(snapshot: Snapshot): string {
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

export function eventLabel(event: GraphEvent): string {
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

export function pathName(path: Path): string {
  const [first, ...rest] = path.steps;
  const parts = [first ? stateLabel(first.state) : "?"];
  for (const step of rest) parts.push(`—${eventLabel(step.event)}→ ${stateLabel(step.state)}`);
  return parts.join(" ");
}

// ---------------------------------------------------------------------------------------------------
// The expectation a path carries: which re-check events the machine must emit along it.

export type RecheckEvent = Extract<RunEmitted, { type: "recheck.fired" | "recheck.skipped" }>;

export function expectedRecheckEvents(path: Path, settings: RecheckSettings): Array<Partial<RecheckEvent>> {
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
// Paths the tests name

export function configNamed(title: string): GraphConfig {
  const config = CONFIGS.find((candidate) => candidate.title === title);
  if (!config) throw new Error(`no graph config "${title}"`);
  return config;
}

export function findPath(config: GraphConfig, wanted: Array<Partial<RecheckEvent>>): Path {
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

/** Every state of a config's graph with every transition out of it. */
export function adjacency(
  config: GraphConfig,
): Record<string, { state: Snapshot; transitions: Record<string, { event: GraphEvent; state: Snapshot }> }> {
  return getAdjacencyMap(runMachine as never, traversal(config) as never) as never;
}
