import { fromCallback, fromPromise, type SnapshotFrom } from "xstate";
import type { GatewayConfig } from "../config.js";
import type { RunInput, RunOutput } from "../machines/run.machine.js";
import { sessionMachine } from "../machines/session.machine.js";
import type { DeliverInput, DeliverOutput, SessionEvent } from "../machines/session.types.js";
import { failedOutput } from "../machines/session-context.js";
import type { QueueMode, ResolvedQueueSetting } from "../policy/queue-mode.js";

/**
 * The session machine as a graph for users: messages in each queue mode the config allows, `/stop`
 * and `/new`, the lane's grant, the ends of the session's actors (run, delivery, transcript reset) and
 * the collect window's timer. The invoked actors are inert here: the traversal delivers their results
 * as events. The alphabet is what a user can cause through the gateway: a message arrives while a turn
 * runs, while its reply is on its way, during a collect window; the slot is granted at once (one
 * session alone in its lane) and a reset of the in-memory transcript takes no time, so nothing arrives
 * in between. Lane timeouts, crashing actors and store failures are the session's own graph tests'.
 */

type SessionSnapshot = SnapshotFrom<typeof sessionMachine>;

export type SessionGraphEvent =
  | SessionEvent
  | { type: "xstate.done.actor.run"; output: RunOutput }
  | { type: "xstate.done.actor.deliver"; output: DeliverOutput }
  | { type: "xstate.done.actor.resetTranscript"; output: undefined }
  | { type: typeof COLLECT_WINDOW };

export const COLLECT_WINDOW = "xstate.after.collectWindow.session.collecting";

/** The session machine with inert actors: results come as graph events. */
export const sessionGraphMachine = sessionMachine.provide({
  actors: {
    run: fromPromise<RunOutput, RunInput>(() => new Promise(() => {})),
    laneSlot: fromCallback(() => () => {}),
    deliver: fromPromise<DeliverOutput, DeliverInput>(() => new Promise(() => {})),
    resetTranscript: fromPromise<void, unknown>(() => new Promise(() => {})),
  } as never,
});

/** What a run ends with in the graph; the session's states do not depend on it. */
export const SESSION_RUN_DONE: RunOutput = {
  ...failedOutput("web:graph#1", ""),
  status: "done",
  final: "answer",
  error: null,
};

export function sessionTraversal(config: GatewayConfig, configuredMode: QueueMode | undefined) {
  const modes: QueueMode[] = configuredMode
    ? [configuredMode]
    : ["steer", "followup", "collect", "interrupt", "reject", "rollback"];
  const setting = (mode: QueueMode): ResolvedQueueSetting => ({
    mode,
    modeSource: configuredMode ? "global" : "inline",
    debounceMs: config.queue.debounceMs ?? 500,
    cap: config.queue.cap ?? 20,
    drop: config.queue.drop ?? "summarize",
  });

  const events: SessionGraphEvent[] = [
    ...modes.map((mode) => ({
      type: "session.message" as const,
      message: { id: `m-${mode}`, text: `a ${mode} message`, channel: "web", at: 0 },
      setting: setting(mode),
    })),
    { type: "session.stop" },
    { type: "session.new" },
    { type: "lane.granted", runId: "web:graph#1" },
    { type: "xstate.done.actor.run", output: SESSION_RUN_DONE },
    { type: "xstate.done.actor.deliver", output: { delivered: true, recovery: null } },
    { type: "xstate.done.actor.resetTranscript", output: undefined },
    { type: COLLECT_WINDOW },
  ];
  return {
    machine: sessionGraphMachine,
    input: { key: "web:graph" },
    events,
    serializeState: (snapshot: SessionSnapshot) => {
      const { context } = snapshot;
      // The kinds of the first three queue items: what runs next, and after it, decides the states.
      return JSON.stringify([
        snapshot.value,
        context.queue.slice(0, 3).map((item) => item.kind),
        context.queue.length > 3,
        context.pending ? Math.min(context.pending.messages.length, 2) : null,
        isStopping(snapshot),
      ]);
    },
    filterEvents: (snapshot: SessionSnapshot, event: SessionGraphEvent) => isPossible(snapshot, event),
    label: (event: SessionGraphEvent) => sessionEventLabel(event),
  };
}

/**
 * Actor results only while that actor lives; the lane's grant only while the turn waits for it, and
 * nothing else then (it comes at once), nor while the transcript resets.
 */
function isPossible(snapshot: SessionSnapshot, event: SessionGraphEvent): boolean {
  const children = snapshot.children as Record<string, unknown>;
  if (snapshot.matches({ turn: "waitingForLane" })) return event.type === "lane.granted";
  if (snapshot.matches("resetting")) return event.type === "xstate.done.actor.resetTranscript";
  const result = /^xstate\.done\.actor\.(.+)$/.exec(event.type);
  if (result) return children[result[1]!] !== undefined;
  if (event.type === "lane.granted") return false;
  // A stopped or interrupted turn ends without a reply: its delivery takes no time, and steering it
  // would run as a turn of its own, which this graph's abstract run does not show.
  if (isStopping(snapshot)) {
    if (snapshot.matches({ turn: "delivering" })) return false;
    if (event.type === "session.message" && event.setting.mode === "steer") return false;
  }
  if (event.type === COLLECT_WINDOW) return snapshot.matches("collecting");
  return true;
}

/** The turn was stopped (`/stop` empties what it owns) or an interrupting message waits to replace it. */
function isStopping(snapshot: SessionSnapshot): boolean {
  if (!snapshot.matches("turn")) return false;
  const { pending, queue } = snapshot.context;
  return (
    pending?.messages.length === 0 ||
    queue.some(
      (item) =>
        item.kind !== "recovery" &&
        item.messages.some((message) => message.id === "m-interrupt" || message.id === "m-rollback"),
    )
  );
}

export function sessionEventLabel(event: SessionGraphEvent): string {
  switch (event.type) {
    case "session.message":
      return `${event.setting.mode === "interrupt" ? "an" : "a"} ${event.setting.mode} message`;
    case "session.stop":
      return "/stop";
    case "session.new":
      return "/new";
    case "lane.granted":
      return "the lane grants a slot";
    case "xstate.done.actor.run":
      return "the run ends";
    case "xstate.done.actor.deliver":
      return "the final is delivered";
    case "xstate.done.actor.resetTranscript":
      return "the transcript is reset";
    case COLLECT_WINDOW:
      return "the collect window closes";
    default:
      return event.type;
  }
}
