import type { AnyActorRef, SnapshotFrom } from "xstate";
import type { RunInput, RunOutput } from "../../src/machines/run.machine.js";
import type { sessionMachine } from "../../src/machines/session.machine.js";
import type { DeliverOutput, PendingTurn, SessionEvent } from "../../src/machines/session.types.js";
import { failedOutput } from "../../src/machines/session-context.js";
import type { DropPolicy, QueueMode, ResolvedQueueSetting } from "../../src/policy/queue-mode.js";
import type { OwnedMessage } from "../../src/policy/turn-context.js";

// The session machine's graph for the model-based tests: the explicit event list (inbound messages in
// every mode, controls, lane answers, the done/error results of every invoked actor, and the collect
// window's delayed event), which events are possible where, how states are told apart, and the names
// of paths. session-harness.ts replays a path on a real actor.

// ---------------------------------------------------------------------------------------------------
// Events of the traversal

const DEBOUNCE_MS = 500;

export function setting(mode: QueueMode, cap = 20, drop: DropPolicy = "summarize"): ResolvedQueueSetting {
  return { mode, modeSource: "inline", debounceMs: DEBOUNCE_MS, cap, drop };
}

export function graphMessage(
  label: string,
  mode: QueueMode,
  channel = "telegram",
  cap = 20,
  drop: DropPolicy = "summarize",
) {
  return {
    type: "session.message" as const,
    message: { id: `g-${label}`, text: label, channel, at: 0 },
    setting: setting(mode, cap, drop),
  };
}

export const GRAPH_RUN_INPUT: RunInput = runInputFor({
  session: "s",
  runId: "s#g",
  pending: { kind: "turn", messages: [], summaries: [] },
});

export const GRAPH_RUN_OUTPUT: RunOutput = {
  ...failedOutput("s#g", ""),
  status: "done",
  final: "answer",
  error: null,
};

export const COLLECT_WINDOW = "xstate.after.collectWindow.session.collecting";

export type GraphEvent =
  | SessionEvent
  | { type: "xstate.done.actor.run"; output: RunOutput }
  | { type: "xstate.error.actor.run"; error: string }
  | { type: "xstate.done.actor.deliver"; output: DeliverOutput }
  | { type: "xstate.error.actor.deliver"; error: string }
  | { type: "xstate.done.actor.resetTranscript"; output: undefined }
  | { type: "xstate.error.actor.resetTranscript"; error: string }
  | { type: typeof COLLECT_WINDOW };

/** A message from a named sender (the other messages are the anonymous user's), optionally with steering across senders on. */
function senderMessage(label: string, id: string, across = false) {
  const event = graphMessage(label, "steer");
  return {
    ...event,
    message: { ...event.message, sender: { id } },
    setting: across ? { ...event.setting, steerAcrossSenders: true as const } : event.setting,
  };
}

// Same sender and other sender while a turn runs: bob's steer, and bob's steer with steering across
// senders allowed (the anonymous steer above is then the other sender's, in a turn bob owns).
const SENDER_EVENTS = [senderMessage("bob", "bob"), senderMessage("bob-across", "bob", true)];

/** Edits of the first waiting message and of the turn's first message (resolved where they are offered). */
const EDIT_EVENTS = [
  {
    ...graphMessage("edit-queued", "steer"),
    message: { ...graphMessage("edit-queued", "steer").message, editOf: "@queued" },
  },
  {
    ...graphMessage("edit-turn", "steer"),
    message: { ...graphMessage("edit-turn", "steer").message, editOf: "@turn" },
  },
];

const MESSAGE_EVENTS = [
  graphMessage("steer", "steer"),
  graphMessage("followup", "followup"),
  graphMessage("collect", "collect"),
  graphMessage("collect-web", "collect", "web"),
  graphMessage("interrupt", "interrupt"),
  graphMessage("reject", "reject"),
  graphMessage("rollback", "rollback"),
];
const CAP_EVENTS = [
  graphMessage("cap-new", "followup", "telegram", 1, "new"),
  graphMessage("cap-old", "followup", "telegram", 1, "old"),
  graphMessage("cap-summarize", "followup", "telegram", 1, "summarize"),
];
const CONTROL_EVENTS: GraphEvent[] = [
  { type: "session.stop" },
  { type: "session.new" },
  { type: "session.resume" },
];
const LANE_EVENTS: GraphEvent[] = [
  { type: "lane.granted", runId: "s#g", input: GRAPH_RUN_INPUT },
  { type: "turn.prepareFailed", error: "store unavailable" },
  { type: "lane.rejected", reason: "lane cleared" },
  { type: "lane.timeout" },
];
/** The delivery's answer for a final that did not reach the user: a recovery of `deliveryMode`. */
function strandedDelivery(deliveryMode: "automatic" | "message_tool_only"): GraphEvent {
  return {
    type: "xstate.done.actor.deliver",
    output: {
      delivered: false,
      recovery: { kind: "recovery", text: "a stranded final", strandedRunId: "s#g", deliveryMode },
    },
  };
}

const ACTOR_EVENTS: GraphEvent[] = [
  { type: "xstate.done.actor.run", output: GRAPH_RUN_OUTPUT },
  { type: "xstate.error.actor.run", error: "run crashed" },
  { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
  strandedDelivery("automatic"),
  strandedDelivery("message_tool_only"),
  { type: "xstate.error.actor.deliver", error: "channel down" },
  { type: "xstate.done.actor.resetTranscript", output: undefined },
  { type: "xstate.error.actor.resetTranscript", error: "store unavailable" },
  { type: COLLECT_WINDOW },
];

export type Snapshot = SnapshotFrom<typeof sessionMachine>;

/** Offers an event only where the real world could produce it: actor results only while the actor lives. */
function possible(snapshot: Snapshot, event: GraphEvent): boolean {
  const children = snapshot.children as Record<string, unknown>;
  const actorResult = /^xstate\.(done|error)\.actor\.(.+)$/.exec(event.type);
  if (actorResult) return children[actorResult[2]!] !== undefined;
  if (event.type === "lane.granted" || event.type === "lane.rejected" || event.type === "turn.prepareFailed")
    return snapshot.matches({ turn: "waitingForLane" });
  if (event.type === "lane.timeout")
    return children.laneSlot !== undefined && !snapshot.matches({ turn: "waitingForLane" });
  if (event.type === COLLECT_WINDOW) return snapshot.matches("collecting");
  if (event.type === "session.message" && event.message.editOf !== undefined) {
    // The graph's messages reuse an id per label: an edit is offered only where its target is unique.
    const target = editTarget(snapshot, event.message.editOf);
    const ids = [
      ...snapshot.context.queue.flatMap((item) => (item.kind === "recovery" ? [] : item.messages)),
      ...(snapshot.context.pending?.messages ?? []),
    ].map((message) => message.id);
    return target !== undefined && ids.filter((id) => id === target).length === 1;
  }
  if (event.type === "session.message") {
    // Narrow the alphabet where it adds states but no new behaviour: the cap only matters while a turn
    // runs, a second channel only next to a burst of the first.
    if (event.setting.cap < 20) return snapshot.matches({ turn: "running" });
    // A named sender's message matters next to a turn (or a queue) someone else may own.
    if (event.message.sender) return snapshot.matches("turn");
    if (event.message.channel !== "telegram") {
      return snapshot.context.queue.some((item) => item.kind === "collect" && item.channel === "telegram");
    }
  }
  return true;
}

/**
 * State value plus the bounded facts the guards read or a bug could hide in: the queue's head kind and
 * length (capped at 2), the pending turn's kind and message count (capped at 2, kept after the turn
 * ends), how many messages the live run was started with (capped at 2) and whether summaries wait.
 * Message ids, run ids and counters are left out.
 */
export function serialize(snapshot: Snapshot): string {
  const { context } = snapshot;
  const head = context.queue[0];
  const pending = context.pending;
  const run = (snapshot.children as Record<string, AnyActorRef | undefined>).run?.getSnapshot() as
    | FakeRunSnapshot
    | undefined;
  return JSON.stringify({
    value: snapshot.value,
    head:
      head?.kind === "collect"
        ? `collect:${head.channel}`
        : head?.kind === "recovery"
          ? `recovery:${head.deliveryMode}`
          : (head?.kind ?? null),
    length: Math.min(context.queue.length, 2),
    pending: pending
      ? `${pending.recovery?.deliveryMode ?? pending.kind}:${Math.min(pending.messages.length, 2)}`
      : null,
    run: run ? Math.min(run.context.input.messages.length, 2) : null,
    // Who owns the pending turn and the queue's head (the guards compare senders).
    owners: pending ? unique(pending.messages.map((message) => message.sender?.id ?? "-")).join(",") : null,
    headOwner: head && head.kind !== "recovery" ? (head.messages[0]?.sender?.id ?? "-") : null,
    summaries: context.summaries.length > 0,
    // A turn cut off in rollback mode delivers differently (its records are hidden afterwards).
    ...(pending?.rolledBack ? { rolledBack: true } : {}),
  });
}

/** The id an abstract edit (`@queued`, `@turn`) replaces in this snapshot, if there is one. */
export function editTarget(snapshot: Snapshot, editOf: string): string | undefined {
  if (editOf === "@queued")
    return snapshot.context.queue.flatMap((item) => (item.kind === "recovery" ? [] : item.messages))[0]?.id;
  if (editOf === "@turn")
    return snapshot.context.pending?.kind === "turn" ? snapshot.context.pending.messages[0]?.id : undefined;
  return editOf;
}

/** The lane slot is granted with the run input for the turn that asked, as the real one prepares it. */
function concrete(snapshot: Snapshot, event: GraphEvent): GraphEvent {
  if (event.type === "session.message" && event.message.editOf?.startsWith("@"))
    return { ...event, message: { ...event.message, editOf: editTarget(snapshot, event.message.editOf)! } };
  if (event.type !== "lane.granted") return event;
  const slot = (snapshot.children as Record<string, AnyActorRef | undefined>).laneSlot;
  const input = slot?.getSnapshot().input as { session: string; pending: PendingTurn } | undefined;
  return input ? { ...event, input: runInputFor({ ...input, runId: event.runId ?? "s#g" }) } : event;
}

export function describeEvent(event: GraphEvent): string {
  if (event.type === "session.message") {
    const { mode, cap, drop } = event.setting;
    const where = event.message.channel === "telegram" ? "" : `@${event.message.channel}`;
    const from = event.message.sender
      ? ` from ${event.message.sender.id}${event.setting.steerAcrossSenders ? " across" : ""}`
      : "";
    const edit = event.message.editOf ? " edit" : "";
    return `message(${mode}${where}${cap < 20 ? ` cap ${cap} drop ${drop}` : ""}${from}${edit})`;
  }
  if (event.type === "xstate.done.actor.deliver") {
    const { recovery } = event.output;
    return recovery ? `deliver.stranded(${recovery.deliveryMode})` : "deliver.done";
  }
  if (event.type === COLLECT_WINDOW) return "collect window elapses";
  return event.type.replace(/^xstate\.(done|error)\.actor\.(.+)$/, "$2.$1");
}

export function describeState(snapshot: Snapshot): string {
  const value =
    typeof snapshot.value === "string" ? snapshot.value : `turn.${String(Object.values(snapshot.value)[0])}`;
  const queue = snapshot.context.queue.map((item) => item.kind).join(",");
  return queue ? `${value} [${queue}]` : value;
}

function runInputFor(input: { session: string; runId: string; pending: PendingTurn }): RunInput {
  return {
    runId: input.runId,
    session: input.session,
    kind: input.pending.kind,
    messages: input.pending.messages,
    preamble: [],
    history: [],
    olderUserTexts: [],
    recheck: { enabled: false, maxPasses: 0, minOverlap: 0, complaintPatterns: [] },
    tools: [],
    cancellableTools: [],
  };
}

/** What the fake run holds: its input, the steering it was sent, and the aborts. */
export interface FakeRunContext {
  input: RunInput;
  steered: OwnedMessage[];
  aborts: string[];
}

export interface FakeRunSnapshot {
  status: string;
  context: FakeRunContext;
}

export function unique(values: string[]): string[] {
  return [...new Set(values)];
}

// ---------------------------------------------------------------------------------------------------
// Paths

export const ALL_EVENTS: GraphEvent[] = [
  ...MESSAGE_EVENTS,
  ...EDIT_EVENTS,
  ...SENDER_EVENTS,
  ...CAP_EVENTS,
  ...CONTROL_EVENTS,
  ...LANE_EVENTS,
  ...ACTOR_EVENTS,
];

export type GraphPath = { name: string; steps: ReadonlyArray<{ event: GraphEvent; state: Snapshot }> };

export function traversal(
  events: readonly GraphEvent[],
  limit: number,
  key: (snapshot: Snapshot) => string = serialize,
) {
  return {
    input: { key: "s" },
    events: (snapshot: Snapshot) =>
      events.filter((event) => possible(snapshot, event)).map((event) => concrete(snapshot, event)) as never,
    serializeState: (snapshot: Snapshot) => key(snapshot),
    limit,
  };
}

export function named(steps: ReadonlyArray<{ event: GraphEvent; state: Snapshot }>): GraphPath {
  const route = steps
    .slice(1)
    .map((step) => describeEvent(step.event))
    .join(" → ");
  return { name: `${route || "start"} ⇒ ${describeState(steps.at(-1)!.state)}`, steps };
}

export function asSteps(path: { steps: unknown }): Array<{ event: GraphEvent; state: Snapshot }> {
  return path.steps as Array<{ event: GraphEvent; state: Snapshot }>;
}
