import { getNextSnapshot, type SnapshotFrom } from "xstate";
import { type GatewayConfigInput, parseConfig } from "../config.js";
import { stateName } from "../gateway/inbound/validate-inbound.js";
import type { ScenarioExpect } from "../scenario/expect-schema.js";
import type { Scenario } from "../scenario/schema.js";
import type { MachinePath } from "./machine-paths.js";
import type { ScenarioFile } from "./run-path-scenario.js";
import {
  COLLECT_WINDOW,
  SESSION_RUN_DONE,
  type SessionGraphEvent,
  sessionGraphMachine,
} from "./session-graph.js";

type SessionSnapshot = SnapshotFrom<typeof sessionGraphMachine>;

const SESSION = "web:path";
const CHANNEL = "web";
/** Every turn: a quick model call asks for one tool that cannot be cancelled, then a quick final. */
const CALL_MS = 50;
const TOOL_MS = 1_000;
/** Each reply takes this long to send, so messages can arrive while it is on its way. */
const SEND_MS = 1_000;
const GAP_MS = 100;

/** A session path that no timing of messages can reproduce through the gateway. */
export class UnrealizablePathError extends Error {}

/**
 * Turns a path of the session machine into a scenario: each message (in its inline queue mode),
 * `/stop` and `/new` placed on the simulated clock inside the turn, reply or collect window it must
 * arrive during; every turn's model asks for one tool that cannot be cancelled (so a stop leaves the
 * turn running until the tool ends, as it would) and then answers `Re: {{latestUser}}`; each reply takes
 * a second to send. The `expect` block states the session's states, every ack, and the replies.
 */
export function sessionPathScenario(given: MachinePath, config: GatewayConfigInput = {}): ScenarioFile {
  if (given.machine !== "session")
    throw new TypeError(`sessionPathScenario takes a session path, not ${given.machine}`);
  if (given.steps.length < 2)
    throw new UnrealizablePathError(
      "nothing happens on this path: the session only exists once a message arrives",
    );
  const path = completed(given);
  const debounceMs = parseConfig(config).queue.debounceMs ?? 500;
  const inbound: Scenario["inbound"] = [];
  const rules: Scenario["model"] = [];
  const tools: Scenario["tools"] = {};
  const acks: NonNullable<ScenarioExpect["acks"]> = [];
  const replies: string[] = [];

  let t = 0;
  let turn = 0;
  let toolStart = 0;
  let aborted = false;
  let turnMode = "";
  let deliverStart = 0;
  let sending = false;
  let windowStart = 0;
  let count = 0;

  /** The latest moment an arrival may take in the state it arrives in. */
  const deadline = (snapshot: SessionSnapshot): number => {
    if (snapshot.matches({ turn: "delivering" })) return sending ? deliverStart + SEND_MS : deliverStart;
    if (snapshot.matches("collecting")) return windowStart + debounceMs;
    return Number.POSITIVE_INFINITY;
  };
  const arrive = (before: SessionSnapshot): number => {
    t += GAP_MS;
    if (t >= deadline(before))
      throw new UnrealizablePathError(`no room for an arrival in ${stateName(before.value)}`);
    // Whatever arrives while a turn runs arrives while its tool works: the tool lasts past it.
    const tool = tools[`work_${turn}`];
    if (before.matches({ turn: "running" }) && tool)
      tool.durationMs = Math.max(tool.durationMs, t - toolStart + GAP_MS);
    return t;
  };

  for (let i = 1; i < path.steps.length; i++) {
    const event = path.steps[i]!.event as SessionGraphEvent;
    const before = path.steps[i - 1]!.snapshot as SessionSnapshot;
    const after = path.steps[i]!.snapshot as SessionSnapshot;
    switch (event.type) {
      case "session.message": {
        const at = arrive(before);
        const mode = event.setting.mode;
        const id = `m${++count}`;
        inbound.push({ at, session: SESSION, channel: CHANNEL, id, text: `${mode} message ${count}`, mode });
        const decision = after.context.lastDecision;
        if (decision?.messageId === event.message.id)
          acks.push({ messageId: id, disposition: decision.disposition });
        if (before.matches({ turn: "running" })) {
          // The session graph's run is abstract: steering that reaches a run already stopping runs
          // as a turn of its own in the real gateway, which this graph does not show.
          if (mode === "steer" && aborted) {
            throw new UnrealizablePathError("a steering message reaches a run that is already stopping");
          }
          if (mode === "interrupt" || mode === "rollback") aborted = true;
          if (mode === "steer") turnMode = "steer";
        }
        if (before.matches("collecting") && event.setting.mode === "collect") windowStart = at;
        break;
      }
      case "session.stop":
      case "session.new": {
        const at = arrive(before);
        const id = `c${++count}`;
        inbound.push({
          at,
          session: SESSION,
          channel: CHANNEL,
          id,
          text: event.type === "session.stop" ? "/stop" : "/new",
        });
        acks.push({ messageId: id, disposition: "control" });
        if (before.matches({ turn: "running" })) aborted = true;
        break;
      }
      case "lane.granted": {
        turn += 1;
        aborted = false;
        const owned = after.context.pending?.messages ?? [];
        turnMode = owned.length > 0 ? modeOf(owned[owned.length - 1]!.id) : "";
        toolStart = t + CALL_MS;
        rules.push(
          {
            when: { session: SESSION, turn, call: 1 },
            reply: { delayMs: CALL_MS, toolCalls: [{ name: `work_${turn}` }] },
          },
          {
            when: { session: SESSION, turn, call: 2 },
            reply: { delayMs: CALL_MS, text: "Re: {{latestUser}}" },
          },
        );
        tools[`work_${turn}`] = { durationMs: TOOL_MS, cancellable: false, result: "done" };
        break;
      }
      case "xstate.done.actor.run": {
        const toolEnd = toolStart + (tools[`work_${turn}`]?.durationMs ?? TOOL_MS);
        t = aborted ? toolEnd : toolEnd + CALL_MS;
        deliverStart = t;
        sending = !aborted;
        if (!aborted) replies.push(turnMode);
        break;
      }
      case "xstate.done.actor.deliver":
        t = Math.max(t, deliverStart + (sending ? SEND_MS : 0));
        if (after.matches("collecting")) windowStart = t;
        break;
      case COLLECT_WINDOW:
        t = windowStart + debounceMs;
        break;
      default:
        break;
    }
  }
  rules.push({ reply: { delayMs: CALL_MS, text: "Re: {{latestUser}}" } });
  const expect: ScenarioExpect = {
    states: [{ machine: "session", session: SESSION, turn: 1, values: dedupe(path.states) }],
    acks,
    deliveries: replies.map((mode) => ({
      kind: "reply" as const,
      session: SESSION,
      textMatches: `^Re: ${mode || "[a-z]+"} message \\d+$`,
    })),
    deliveryCount: { count: replies.length, kind: "reply" },
  };
  return {
    name: `session path: ${given.name}`,
    config: config as Scenario["config"],
    model: rules,
    tools,
    channels: { [CHANNEL]: { failSends: 0, omitMessageId: false, sendDelayMs: SEND_MS } },
    inbound,
    commitments: [],
    restart: [],
    expect,
  };
}

/** The graph's message ids name their mode: `m-followup` → "followup". */
function modeOf(id: string): string {
  return id.replace(/^m-/, "");
}

/** Carries a path on by the defaults (the slot is granted, runs end, replies go out, windows close). */
function completed(path: MachinePath): MachinePath {
  const steps = [...path.steps];
  let snapshot = steps[steps.length - 1]!.snapshot as SessionSnapshot;
  for (let guard = 0; guard < 100; guard++) {
    const event = defaultEvent(snapshot);
    if (!event) break;
    snapshot = getNextSnapshot(sessionGraphMachine, snapshot, event as never);
    steps.push({ event, snapshot });
  }
  if (steps.length === path.steps.length) return path;
  const states = steps.map((step) => stateName((step.snapshot as SessionSnapshot).value));
  return { ...path, steps, states, events: steps.slice(1).map((step) => step.event.type) };
}

function defaultEvent(snapshot: SessionSnapshot): SessionGraphEvent | undefined {
  if (snapshot.matches({ turn: "waitingForLane" })) return { type: "lane.granted", runId: "web:graph#1" };
  if (snapshot.matches({ turn: "running" })) {
    return { type: "xstate.done.actor.run", output: SESSION_RUN_DONE };
  }
  if (snapshot.matches({ turn: "delivering" }))
    return { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } };
  if (snapshot.matches("collecting")) return { type: COLLECT_WINDOW };
  if (snapshot.matches("resetting")) return { type: "xstate.done.actor.resetTranscript", output: undefined };
  return undefined;
}

function dedupe(values: readonly string[]): string[] {
  return values.filter((value, index) => value !== values[index - 1]);
}
