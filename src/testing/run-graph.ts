import type { SnapshotFrom } from "xstate";
import type { GatewayConfig } from "../config.js";
import {
  type CallModelOutput,
  type RunEvent,
  type RunInput,
  type RunToolOutput,
  runMachine,
} from "../machines/run.machine.js";
import type { QueueMode } from "../policy/queue-mode.js";

/**
 * The run machine as a graph for users: one turn of a session whose model asks for two tools
 * (`write_file`, which cannot be cancelled, then `search`, which can), under the re-check settings and
 * queue mode of the user's config. The texts are fixed so that a generated scenario reproduces the
 * machine's verdicts exactly in the real gateway.
 */

export type RunSnapshot = SnapshotFrom<typeof runMachine>;

/** A graph event: what the session sends the run, or what its invoked actors answer. */
export type RunGraphEvent =
  | RunEvent
  | { type: "xstate.done.actor.callModel"; output: CallModelOutput }
  | { type: "xstate.error.actor.callModel"; error: unknown }
  | { type: "xstate.done.actor.runTool"; output: RunToolOutput }
  | { type: "xstate.error.actor.runTool"; error: unknown };

export const RUN_GRAPH_TEXTS = {
  request: "Please update the checklist file",
  steer: "Also add a summary to the checklist",
  draft: "Re: the checklist file is updated and a summary is added",
  interimText: "Let me update the file.",
} as const;

/** The two tools every run graph's model asks for, in this order. */
export const RUN_GRAPH_TOOLS = [
  { name: "write_file", cancellable: false },
  { name: "search", cancellable: true },
] as const;

/** The run input a session builds for a turn started by one message, under the given config. */
export function runGraphInput(config: GatewayConfig): RunInput {
  const recheck = config.staleReplyRecheck;
  return {
    runId: "web:graph#1",
    session: "web:graph",
    kind: "turn",
    messages: [{ id: "m1", text: RUN_GRAPH_TEXTS.request, channel: "web", at: 0 }],
    preamble: [],
    history: [],
    olderUserTexts: [],
    recheck: {
      enabled: recheck.enabled,
      maxPasses: recheck.maxPasses,
      minOverlap: recheck.minOverlap,
      complaintPatterns: recheck.complaintPatterns,
    },
    tools: RUN_GRAPH_TOOLS.map((tool) => tool.name),
    cancellableTools: RUN_GRAPH_TOOLS.filter((tool) => tool.cancellable).map((tool) => tool.name),
    maxModelCalls: config.limits.maxModelCallsPerTurn,
  };
}

/**
 * The events of the traversal. What a user can send while a turn runs depends on the queue mode: a
 * `steer` message steers, an `interrupt` message aborts, `/stop` works in every mode. With no mode
 * configured, both a steering and an interrupting message are offered.
 */
export function runGraphEvents(configuredMode?: QueueMode): RunGraphEvent[] {
  const events: RunGraphEvent[] = [];
  if (configuredMode === undefined || configuredMode === "steer") {
    events.push({
      type: "run.steer",
      message: { id: "steer", text: RUN_GRAPH_TEXTS.steer, channel: "web", at: 1 },
    });
  }
  if (configuredMode === undefined || configuredMode === "interrupt") {
    events.push({ type: "run.abort", reason: "interrupted by a newer message" });
  }
  events.push(
    { type: "run.stop", reason: "stopped by /stop" },
    {
      type: "xstate.done.actor.callModel",
      output: {
        text: RUN_GRAPH_TEXTS.interimText,
        toolCalls: RUN_GRAPH_TOOLS.map((tool, index) => ({
          callId: `c${index + 1}`,
          name: tool.name,
          args: {},
        })),
        persisted: 0,
      },
    },
    {
      type: "xstate.done.actor.callModel",
      output: { text: RUN_GRAPH_TEXTS.draft, toolCalls: [], persisted: 0 },
    },
    {
      type: "xstate.error.actor.callModel",
      error: { code: "MODEL_FAILED", message: "the model failed", retryable: false },
    },
    { type: "xstate.done.actor.runTool", output: { status: "done", result: "ok", persisted: 0 } },
    { type: "xstate.error.actor.runTool", error: { message: "the tool failed" } },
  );
  return events;
}

/** The state value and the small facts guards read; drafts, journals and counters are left out. */
export function runStateKey(snapshot: RunSnapshot): string {
  const { context } = snapshot;
  return JSON.stringify([
    snapshot.status,
    snapshot.value,
    context.passes,
    context.steerBuffer.length > 0,
    context.toolIndex,
    context.verdict.stale,
  ]);
}

/** Actor results only while that actor runs; nothing after the run ended. */
export function isPossibleRunEvent(snapshot: RunSnapshot, event: RunGraphEvent): boolean {
  if (snapshot.status !== "active") return false;
  if (event.type.endsWith(".callModel")) return snapshot.matches("streaming");
  if (event.type.endsWith(".runTool")) return snapshot.matches({ toolBatch: "toolRunning" });
  return true;
}

/** A state's value with the facts a reader needs: the re-check pass, held steering, a skipped re-check. */
export function runStateLabel(snapshot: RunSnapshot, value: string): string {
  const { context } = snapshot;
  const facts: string[] = [];
  if (context.passes > 0) facts.push(`re-check ${context.passes}`);
  if (context.steerBuffer.length > 0 && snapshot.status === "active") facts.push("steering held");
  if (snapshot.status === "done" && snapshot.output?.status === "done" && context.verdict.stale) {
    facts.push(`stale draft shipped: ${context.input.recheck.enabled ? "limit" : "re-check disabled"}`);
  }
  return facts.length > 0 ? `${value} (${facts.join(", ")})` : value;
}

/** A short readable name for a graph event. */
export function runEventLabel(event: RunGraphEvent): string {
  switch (event.type) {
    case "run.start":
      return "start";
    case "run.steer":
      return "a steering message";
    case "run.abort":
      return "an interrupting message";
    case "run.stop":
      return "/stop";
    case "xstate.done.actor.callModel":
      return event.output.toolCalls.length > 0 ? "the model asks for tools" : "the model drafts a final";
    case "xstate.error.actor.callModel":
      return "the model fails";
    case "xstate.done.actor.runTool":
      return "the tool ends";
    case "xstate.error.actor.runTool":
      return "the tool throws";
    default:
      return (event as { type: string }).type;
  }
}

export { runMachine };
