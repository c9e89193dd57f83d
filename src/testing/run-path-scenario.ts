import { getNextSnapshot } from "xstate";
import { stateName } from "../gateway/inbound/validate-inbound.js";
import type { ScenarioExpect } from "../scenario/expect-schema.js";
import type { Scenario } from "../scenario/schema.js";
import type { MachinePath } from "./machine-paths.js";
import {
  RUN_GRAPH_TEXTS,
  RUN_GRAPH_TOOLS,
  type RunGraphEvent,
  type RunSnapshot,
  runMachine,
} from "./run-graph.js";

/** How long a scripted model call and a tool take when nothing has to happen during them. */
export const MODEL_MS = 1_000;
export const TOOL_MS = 5_000;
/** Spacing of arrivals inside a model call or a tool. */
const GAP_MS = 100;

const SESSION = "web:path";
const CHANNEL = "web";
const DRAFT = "Re: {{latestUser}}";

/** A scenario (the file format of `tiller run`) as plain data, ready to be written as YAML or JSON. */
export type ScenarioFile = Omit<Scenario, "expect" | "dismiss"> & {
  expect: ScenarioExpect;
  dismiss?: Scenario["dismiss"];
};

type ModelRule = Scenario["model"][number];
type InboundEntry = Scenario["inbound"][number];

/**
 * Turns a path of the run machine into the stimuli that drive the real gateway along it: the first
 * message at 0, each steering, interrupting or `/stop` message inside the model call or tool it must
 * arrive during, model replies scripted per call, tool durations and outcomes per call; and an
 * `expect` block that states the run's states, the acks, the re-check events and what is delivered.
 * Arrivals are placed on the simulated clock, so the scenario follows the path exactly.
 *
 * @example
 * ```ts
 * const [path] = machinePaths("run");
 * const scenario = runPathScenario(path!);
 * ```
 */
export function runPathScenario(given: MachinePath, config: unknown = {}): ScenarioFile {
  if (given.machine !== "run") throw new TypeError(`runPathScenario takes a run path, not ${given.machine}`);
  const path = completed(given);
  const inbound: InboundEntry[] = [
    { at: 0, session: SESSION, channel: CHANNEL, id: "m1", text: RUN_GRAPH_TEXTS.request },
  ];
  const rules: ModelRule[] = [];
  const tools: Scenario["tools"] = {};
  const acks: NonNullable<ScenarioExpect["acks"]> = [{ messageId: "m1", disposition: "started" }];
  const recheckEvents: NonNullable<ScenarioExpect["events"]> = [];

  let t = 0;
  let call = 1;
  let callStart = 0;
  let batch = 0;
  let toolIndex = 0;
  let toolStart = 0;
  let steers = 0;
  let newestInjected: string = RUN_GRAPH_TEXTS.request;
  // Steering the run holds for its next model call, and messages that wait for the next turn.
  const buffered: string[] = [];
  const waiting: string[] = [];
  // Acks the path decides; a steering message sent while the run is already stopping is not one.
  const undecidedAcks = new Set<string>();

  const toolName = (index: number) => `${RUN_GRAPH_TOOLS[index]!.name}_${batch}`;
  const defineTool = (index: number, durationMs: number, error?: string) => {
    tools[toolName(index)] = {
      durationMs,
      cancellable: RUN_GRAPH_TOOLS[index]!.cancellable,
      result: "ok",
      ...(error ? { error } : {}),
    };
  };
  const startCall = (at: number) => {
    callStart = at;
    // Steering held in the buffer joins the turn before this call.
    if (buffered.length > 0) newestInjected = buffered[buffered.length - 1]!;
    buffered.length = 0;
  };
  const endOf = (start: number, least: number) => Math.max(start + least, t + GAP_MS);

  for (let i = 1; i < path.steps.length; i++) {
    const event = path.steps[i]!.event as RunGraphEvent;
    const before = path.steps[i - 1]!.snapshot as RunSnapshot;
    const after = path.steps[i]!.snapshot as RunSnapshot;
    switch (event.type) {
      case "run.steer": {
        t += GAP_MS;
        steers += 1;
        const text = steers === 1 ? RUN_GRAPH_TEXTS.steer : `${RUN_GRAPH_TEXTS.steer} (${steers})`;
        const id = `steer${steers}`;
        inbound.push({ at: t, session: SESSION, channel: CHANNEL, id, text, mode: "steer" });
        if (before.context.abortReason === null) {
          acks.push({ messageId: id, disposition: "steered" });
          buffered.push(text);
        } else {
          // The run is stopping: the session keeps the message for the turn after it.
          undecidedAcks.add(id);
          waiting.push(text);
        }
        break;
      }
      case "run.abort": {
        t += GAP_MS;
        const text = "Stop that and tell me the status instead";
        inbound.push({ at: t, session: SESSION, channel: CHANNEL, id: "interrupt", text, mode: "interrupt" });
        acks.push({ messageId: "interrupt", disposition: "interrupted" });
        // Held steering folds into the interrupting turn, which runs after this one ends.
        waiting.push(...buffered.splice(0), text);
        break;
      }
      case "run.stop": {
        t += GAP_MS;
        inbound.push({ at: t, session: SESSION, channel: CHANNEL, id: `stop${i}`, text: "/stop" });
        acks.push({ messageId: `stop${i}`, disposition: "control" });
        // `/stop` drops held steering and everything waiting.
        buffered.length = 0;
        waiting.length = 0;
        break;
      }
      case "xstate.done.actor.callModel": {
        const end = endOf(callStart, MODEL_MS);
        const asksForTools = event.output.toolCalls.length > 0;
        if (asksForTools) batch += 1;
        rules.push({
          when: { turn: 1, call },
          reply: asksForTools
            ? {
                delayMs: end - callStart,
                text: RUN_GRAPH_TEXTS.interimText,
                toolCalls: RUN_GRAPH_TOOLS.map((_, index) => ({ name: toolName(index) })),
              }
            : { delayMs: end - callStart, text: DRAFT },
        });
        t = end;
        call += 1;
        if (asksForTools && after.matches({ toolBatch: "toolRunning" })) {
          toolIndex = 0;
          toolStart = t;
        } else if (after.matches("streaming")) {
          startCall(t);
        }
        if (after.context.passes > before.context.passes) {
          recheckEvents.push({
            type: "recheck.fired",
            reason: after.context.verdict.stale ? after.context.verdict.reason : undefined,
          });
        }
        break;
      }
      case "xstate.error.actor.callModel": {
        const end = endOf(callStart, MODEL_MS);
        rules.push({
          when: { turn: 1, call },
          reply: { delayMs: end - callStart, error: "the model failed" },
        });
        t = end;
        call += 1;
        break;
      }
      case "xstate.done.actor.runTool":
      case "xstate.error.actor.runTool": {
        const end = endOf(toolStart, TOOL_MS);
        defineTool(
          toolIndex,
          end - toolStart,
          event.type === "xstate.error.actor.runTool" ? "the tool failed" : undefined,
        );
        t = end;
        if (after.matches({ toolBatch: "toolRunning" })) {
          toolIndex += 1;
          toolStart = t;
        } else if (after.matches("streaming")) {
          startCall(t);
        }
        break;
      }
      default:
        break;
    }
  }
  // Tools the path never finished (skipped, cut off, or after its end) keep their default outcome.
  for (let b = 1; b <= batch; b++) {
    for (const tool of RUN_GRAPH_TOOLS) {
      tools[`${tool.name}_${b}`] ??= { durationMs: TOOL_MS, cancellable: tool.cancellable, result: "ok" };
    }
  }
  // Later calls, and the turns after this one, draft a final that names what they answer.
  rules.push({ reply: { delayMs: MODEL_MS, text: DRAFT } });

  const last = path.steps[path.steps.length - 1]!.snapshot as RunSnapshot;
  const expect: ScenarioExpect = {
    states: [{ machine: "run", session: SESSION, turn: 1, values: dedupe(path.states) }],
    acks,
  };
  if (recheckEvents.length > 0) expect.events = recheckEvents.map(stripUndefined);
  if (last.status === "done") {
    const status = last.output?.status;
    const replies: string[] = [];
    if (status === "done") replies.push(`Re: ${newestInjected}`);
    if (status === "failed") expect.deliveries = [{ kind: "notice", session: SESSION }];
    // What the turn did not take (steering it never saw, messages kept while it stopped) is the next
    // turn, which answers the newest of them.
    const next = [...buffered, ...waiting];
    if (next.length > 0) replies.push(`Re: ${next[next.length - 1]}`);
    expect.deliveries = [
      ...(expect.deliveries ?? []),
      ...replies.map((text) => ({ kind: "reply" as const, session: SESSION, text })),
    ];
    expect.deliveryCount = { count: replies.length, kind: "reply" };
    if (status === "done" && last.context.verdict.stale) {
      expect.events = [
        ...(expect.events ?? []),
        { type: "recheck.skipped", reason: last.context.input.recheck.enabled ? "limit" : "disabled" },
      ];
    }
    if (recheckEvents.length === 0 && next.length === 0) expect.noEvents = ["recheck.fired"];
  }
  if (undecidedAcks.size > 0) expect.acks = acks.filter((ack) => !undecidedAcks.has(ack.messageId));
  return {
    name: `run path: ${given.name}`,
    config: config as Scenario["config"],
    model: rules,
    tools,
    channels: { [CHANNEL]: { failSends: 0, omitMessageId: false } },
    inbound,
    commitments: [],
    restart: [],
    expect,
  };
}

/**
 * A path that stops before the run ends is carried on the way the scenario's defaults carry it (each
 * later model call drafts a final, each tool ends), so its scenario can state what the user receives.
 */
function completed(path: MachinePath): MachinePath {
  const steps = [...path.steps];
  let snapshot = steps[steps.length - 1]!.snapshot as RunSnapshot;
  for (let guard = 0; snapshot.status === "active" && guard < 50; guard++) {
    const event: RunGraphEvent | undefined = snapshot.matches("streaming")
      ? {
          type: "xstate.done.actor.callModel",
          output: { text: RUN_GRAPH_TEXTS.draft, toolCalls: [], persisted: 0 },
        }
      : snapshot.matches({ toolBatch: "toolRunning" })
        ? { type: "xstate.done.actor.runTool", output: { status: "done", result: "ok", persisted: 0 } }
        : undefined;
    if (!event) break;
    snapshot = getNextSnapshot(runMachine, snapshot, event as never);
    steps.push({ event, snapshot });
  }
  if (steps.length === path.steps.length) return path;
  const states = steps.map((step) => stateName((step.snapshot as RunSnapshot).value));
  return { ...path, steps, states, events: steps.slice(1).map((step) => step.event.type) };
}

function dedupe(values: readonly string[]): string[] {
  return values.filter((value, index) => value !== values[index - 1]);
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;
}
